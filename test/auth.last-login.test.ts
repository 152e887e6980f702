// Last login: written behind the request, at most once a minute per user, shown by `apiuser list`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../src/cli.js';
import { ManualClock } from '../src/lib/clock.js';
import { type AuthHarness, call, closeSharedSandbox, PROTECTED, startHarness } from './auth-helpers.js';

after(closeSharedSandbox);

describe('last login', () => {
  const t0 = Date.parse('2026-03-02T08:00:00Z');
  const clock = new ManualClock(t0);
  let h: AuthHarness;
  let password = '';
  let farPassword = '';

  before(async () => {
    h = await startHarness({ clock });
    password = await h.addUser('ll', ['127.0.0.0/8']);
    farPassword = await h.addUser('far', ['10.0.0.0/8']);
  });
  after(() => h?.close());

  /** `apiuser list --json` through the CLI, as an operator sees it. */
  async function lastLogin(name: string): Promise<string | null | undefined> {
    let out = '';
    const code = await runCli(['apiuser', 'list', '--json', '--config', h.configFile], {
      out: (text) => {
        out += text;
      },
      err: () => {},
      env: {},
    });
    assert.equal(code, 0);
    return (JSON.parse(out) as { name: string; lastLogin: string | null }[]).find((u) => u.name === name)
      ?.lastLogin;
  }

  const login = (user: string, pw: string) => call(`${h.url}${PROTECTED}`, { user, password: pw });

  it('is empty before the first login', async () => {
    assert.equal(await lastLogin('ll'), null);
  });

  it('records the first login', async () => {
    assert.equal((await login('ll', password)).status, 200);
    assert.equal(await lastLogin('ll'), new Date(t0).toISOString());
  });

  it('writes at most once a minute', async () => {
    clock.advance(30_000);
    assert.equal((await login('ll', password)).status, 200);
    assert.equal(await lastLogin('ll'), new Date(t0).toISOString());
    clock.advance(31_000);
    assert.equal((await login('ll', password)).status, 200);
    assert.equal(await lastLogin('ll'), new Date(t0 + 61_000).toISOString());
  });

  it('does not count failed or refused logins', async () => {
    clock.advance(120_000);
    assert.equal((await login('ll', 'wrong')).status, 401);
    assert.equal(await lastLogin('ll'), new Date(t0 + 61_000).toISOString());
    assert.equal((await login('far', farPassword)).status, 403);
    assert.equal(await lastLogin('far'), null);
  });

  it('carries the once-a-minute rule across a restart', async () => {
    assert.equal((await login('ll', password)).status, 200);
    const written = t0 + 181_000;
    assert.equal(await lastLogin('ll'), new Date(written).toISOString());
    const dir = h.dir;
    await h.close();
    h = await startHarness({ clock, dir });
    clock.advance(10_000);
    assert.equal((await login('ll', password)).status, 200);
    assert.equal(await lastLogin('ll'), new Date(written).toISOString());
    clock.advance(50_000);
    assert.equal((await login('ll', password)).status, 200);
    assert.equal(await lastLogin('ll'), new Date(written + 60_000).toISOString());
  });
});
