// Reloading the mapping tables without a restart: a real SIGHUP to this process with the handler
// `serve` installs. A broken file is refused and logged with file, JSON path and reason while the
// old tables keep serving; a good change takes effect at once, with no code change.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { reloadOnSignal } from '../src/reload.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

type User = { firstname: string; lastname: string; auxInfo: string | null; admin: boolean };

async function waitForLog(proxy: UserProxy, message: RegExp, from: number): Promise<Record<string, unknown>> {
  for (let i = 0; i < 100; i++) {
    const line = proxy.logSink
      .lines()
      .slice(from)
      .find((l) => typeof l.msg === 'string' && message.test(l.msg));
    if (line) return line;
    await sleep(20);
  }
  assert.fail(`no log line matching ${message}`);
}

describe('mapping reload on SIGHUP', () => {
  let proxy: UserProxy;
  let stop: () => void;
  let fieldsFile: string;
  let profileFile: string;
  let original: { fields: string; profile: string };

  before(async () => {
    proxy = await startUserProxy({ copyProfile: true });
    stop = reloadOnSignal(proxy.services, {
      file: undefined,
      env: {},
      logger: proxy.services.logger,
      tlsAtStart: undefined,
    });
    fieldsFile = path.join(proxy.profileDir, 'fields', 'user.json');
    profileFile = path.join(proxy.profileDir, 'profile.json');
    original = { fields: readFileSync(fieldsFile, 'utf8'), profile: readFileSync(profileFile, 'utf8') };
  });
  after(async () => {
    stop?.();
    await proxy?.close();
  });

  /** Sends SIGHUP and waits for the refusal: its problems, with the same engine still serving. */
  async function refusedOnSignal(): Promise<unknown> {
    const engine = proxy.mappings.current();
    const mark = proxy.logSink.lines().length;
    process.kill(process.pid, 'SIGHUP');
    const line = await waitForLog(proxy, /mapping profile not reloaded/, mark);
    assert.equal(proxy.mappings.current(), engine, 'the same engine keeps serving');
    return line.problems;
  }

  it('keeps the old tables live when a file is broken, and logs file, JSON path and reason', async () => {
    const before = await proxy.call<User>('GET', '/Entity/User/thomas.becker');
    assert.equal(before.status, 200);
    const engine = proxy.mappings.current();
    writeFileSync(fieldsFile, original.fields.replace('"direction": "both"', '"direction": "sideways"'));
    const mark = proxy.logSink.lines().length;
    process.kill(process.pid, 'SIGHUP');
    const line = await waitForLog(proxy, /mapping profile not reloaded/, mark);
    assert.equal(line.level, 50);
    assert.deepEqual(line.problems, [
      {
        file: path.join('fields', 'user.json'),
        path: '$.fields.username.direction',
        message: 'Invalid option: expected one of "read"|"write"|"both"',
      },
    ]);
    assert.equal(proxy.mappings.current(), engine, 'the same engine keeps serving');
    const after = await proxy.call<User>('GET', '/Entity/User/thomas.becker');
    assert.equal(after.status, 200);
    assert.deepEqual(after.body, before.body);
  });

  it('refuses a profile that lacks an operation the proxy serves; the old tables stay live', async () => {
    writeFileSync(fieldsFile, original.fields);
    const operationsFile = path.join(proxy.profileDir, 'operations', 'user.json');
    const operations = readFileSync(operationsFile, 'utf8');
    const table = JSON.parse(operations);
    delete table.operations['user.restore'];
    writeFileSync(operationsFile, JSON.stringify(table, null, 2));
    try {
      assert.deepEqual(await refusedOnSignal(), [
        {
          file: '(operations)',
          path: '$.operations["user.restore"]',
          message: 'the proxy serves POST /Core/User/{id}/restore, which has no operation table entry',
        },
      ]);
      const restored = await proxy.call('POST', '/User/thomas.becker/restore');
      assert.equal(restored.status, 204, restored.text);
    } finally {
      writeFileSync(operationsFile, operations);
    }
  });

  it('refuses an ID cache too large to build (cache.max), by JSON path; the old tables stay live', async () => {
    const profile = JSON.parse(original.profile);
    profile.cache.max = 9_000_000_000_000_000; // lru-cache would try to allocate every slot at once
    writeFileSync(profileFile, JSON.stringify(profile, null, 2));
    try {
      assert.deepEqual(await refusedOnSignal(), [
        { file: 'profile.json', path: '$.cache.max', message: 'must be at most 1,000,000' },
      ]);
      const user = await proxy.call('GET', '/Entity/User/thomas.becker');
      assert.equal(user.status, 200, user.text);
    } finally {
      writeFileSync(profileFile, original.profile);
    }
  });

  it('applies a good change at once: other attribute, other setting, no code change', async () => {
    const fields = JSON.parse(original.fields);
    // Read-only: two writable fields on one attribute are refused (a body with both loses one);
    // an optional body field, since one a create requires must stay writable.
    fields.fields.auxInfo = { ...fields.fields.auxInfo, attribute: 'firstname', direction: 'read' };
    writeFileSync(fieldsFile, JSON.stringify(fields, null, 2));
    const profile = JSON.parse(original.profile);
    profile.settings.adminRole = 'ROLE_TEACHER';
    writeFileSync(profileFile, JSON.stringify(profile, null, 2));
    const mark = proxy.logSink.lines().length;
    process.kill(process.pid, 'SIGHUP');
    await waitForLog(proxy, /mapping profile reloaded/, mark);
    const teacher = await proxy.call<User & { roles: string[] }>('GET', '/Entity/User/thomas.becker');
    assert.equal(teacher.status, 200, teacher.text);
    assert.equal(teacher.body.auxInfo, teacher.body.firstname);
    assert.ok(teacher.body.roles.includes('ROLE_TEACHER'));
    assert.equal(teacher.body.admin, true, 'admin now follows the configured role');
  });

  it('goes back when the files are restored', async () => {
    writeFileSync(fieldsFile, original.fields);
    writeFileSync(profileFile, original.profile);
    const result = proxy.mappings.reload();
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.profile, 'iserv-idm-v1');
    const user = await proxy.call<User>('GET', '/Entity/User/thomas.becker');
    assert.equal(user.body.lastname, 'Becker');
    assert.equal(user.body.auxInfo, null);
    assert.equal(user.body.admin, false);
  });
});

describe('a reload that fails unexpectedly', () => {
  let proxy: UserProxy;
  let stop: () => void;
  before(async () => {
    proxy = await startUserProxy();
    // Mapping tables that cannot even be read again (a fault no profile file can cause today):
    // the handler must log it, not let it out of the signal handler, which would end the process.
    const failing = {
      ...proxy.mappings,
      reload: () => {
        throw new RangeError('Invalid array length');
      },
    };
    stop = reloadOnSignal(
      { ...proxy.services, mappings: failing },
      { file: undefined, env: {}, logger: proxy.services.logger, tlsAtStart: undefined },
    );
  });
  after(async () => {
    stop?.();
    await proxy?.close();
  });

  it('is logged by the SIGHUP handler and the process keeps serving the old tables', async () => {
    const mark = proxy.logSink.lines().length;
    process.kill(process.pid, 'SIGHUP');
    const line = await waitForLog(proxy, /mapping profile not reloaded, the previous ones stay live/, mark);
    assert.equal(line.level, 50);
    const user = await proxy.call('GET', '/Entity/User/thomas.becker');
    assert.equal(user.status, 200, user.text);
  });
});
