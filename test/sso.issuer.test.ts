// The SSO token issuer's purge of old tokens: after the token, not waited for, at most once a minute, again at once when the clock
// was set back, and a purge that fails is logged while the token is issued all the same (the
// failure is injected into a real SQLite store: a full disk cannot be caused here).
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ManualClock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';
import { hashSecret, SsoTokenIssuer } from '../src/sso/tokens.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import { LogSink } from './log-sink.js';
import { tempDir } from './temp-dir.js';

describe('SsoTokenIssuer', () => {
  const dir = tempDir('sso-issuer');
  const store = openSqliteStore(path.join(dir, 'store.db'));
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const subject = {
    username: 'lena.mueller',
    userUuid: '0b6b5c0e-6d2f-4c43-9a3f-6b7a1f0e2d11',
    apiUser: 'portal',
  };

  it('does not make the caller wait for a purge: one that hangs (a store locked past its timeout) holds no token up', async () => {
    const clock = new ManualClock();
    let purgeStarted = false;
    const issuer = new SsoTokenIssuer({
      tokens: {
        issue: (hash, token) => store.ssoTokens.issue(hash, token),
        purge: () => {
          purgeStarted = true;
          return new Promise<never>(() => {});
        },
      },
      clock,
      ttlSeconds: 60,
      logger: createLogger({ level: 'silent' }),
    });
    const issued = await Promise.race([
      issuer.issue(subject).then(() => 'issued'),
      new Promise((resolve) => setTimeout(resolve, 2_000, 'waited for the purge')),
    ]);
    assert.equal(issued, 'issued');
    assert.ok(purgeStarted, 'the purge was due, and started once the token was stored');
  });

  it('starts no purge when the token could not be stored', async () => {
    let purges = 0;
    const issuer = new SsoTokenIssuer({
      tokens: {
        issue: () => Promise.reject(new Error('SQLITE_BUSY')),
        purge: async () => {
          purges++;
          return 0;
        },
      },
      clock: new ManualClock(),
      ttlSeconds: 60,
      logger: createLogger({ level: 'silent' }),
    });
    await assert.rejects(issuer.issue(subject), /SQLITE_BUSY/);
    assert.equal(purges, 0);
  });

  it('issues the token when its purge fails, logs the failure, and purges at most once a minute', async () => {
    const clock = new ManualClock();
    const sink = new LogSink();
    let purges = 0;
    const issuer = new SsoTokenIssuer({
      tokens: {
        issue: (hash, token) => store.ssoTokens.issue(hash, token),
        purge: async () => {
          purges++;
          throw new Error('disk I/O error');
        },
      },
      clock,
      ttlSeconds: 60,
      logger: createLogger({ level: 'info', destination: sink }),
    });
    const failed = () => sink.lines().filter((line) => line.msg === 'SSO token purge failed');

    const first = await issuer.issue(subject);
    const consumed = await store.ssoTokens.consume(hashSecret(first.token), clock.now());
    assert.equal(consumed.status, 'consumed', 'the token was stored');
    assert.equal(failed().length, 1, 'the failed purge is logged');
    assert.ok(!sink.text.includes(first.token), 'never the token');

    clock.advance(59_999);
    await issuer.issue(subject);
    assert.equal(purges, 1, 'not again within the minute');
    clock.advance(1);
    await issuer.issue(subject);
    assert.equal(purges, 2, 'a minute after the last one');
    clock.advance(-3_600_000);
    await issuer.issue(subject);
    assert.equal(purges, 3, 'at once after the clock was set back behind the last purge');
    assert.equal(failed().length, 3);
  });
});
