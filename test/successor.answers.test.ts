// Legal answers of a real successor (API Platform behind nginx) that the sandbox does not give,
// end to end: the proxy on a loopback relay in front of the sandbox, which passes every call on
// and reshapes the sandbox's real answer as such a server could.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { ErrorBody } from './relation-helpers.js';
import {
  type ForwardedAnswer,
  forward,
  type LoopbackServer,
  type SeenRequest,
  sendForwarded,
  startLoopback,
} from './successor-helpers.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

/** Reshapes one answer; returns false to pass it on as the sandbox gave it. */
type Shape = (request: SeenRequest, answer: ForwardedAnswer, res: ServerResponse) => boolean;

/** A read of the users collection or of one user. */
const readsOfUsers = (request: SeenRequest) =>
  request.method === 'GET' && /^\/iserv\/idm\/api\/v1\/users(\/[^/]+)?$/.test(request.url.pathname);

/** Answers the calls `matches` picks with API Platform's 403 problem document, in the sandbox's stead. */
function refusing403(matches: (request: SeenRequest) => boolean, detail: string) {
  return (request: SeenRequest, res: ServerResponse): boolean => {
    if (!matches(request)) return false;
    res.writeHead(403, { 'content-type': 'application/problem+json' });
    res.end(JSON.stringify({ title: 'An error occurred', status: 403, detail }));
    return true;
  };
}

describe('answers a real successor may give', () => {
  let proxy: UserProxy;
  let relay: LoopbackServer;
  let shape: Shape | undefined;
  /** Answers a call in the sandbox's stead (it never sees it); returns false to pass it on. */
  let instead: ((request: SeenRequest, res: ServerResponse) => boolean) | undefined;
  let sandboxUrl = '';

  before(async () => {
    relay = await startLoopback(async (request, res) => {
      if (instead?.(request, res)) return;
      const answer = await forward(sandboxUrl, request);
      if (!shape?.(request, answer, res)) sendForwarded(res, answer);
    });
    proxy = await startUserProxy({ successor: { baseUrl: `${relay.url}/iserv/idm/api/v1` } });
    sandboxUrl = proxy.sandbox.url;
  });
  after(async () => {
    await proxy?.close();
    await relay?.close();
  });
  beforeEach(() => {
    shape = undefined;
    instead = undefined;
  });

  /** The calls the relay saw since `from`, as `METHOD path` (no query). */
  const callsSince = (from: number) =>
    relay.requests.slice(from).map((request) => `${request.method} ${request.url.pathname}`);

  describe('a write answered without a body went through: the entity is read back', () => {
    it('a create answered 201 with only a Location (base58, another origin as nginx may write it): 201 with the new group', async () => {
      shape = (request, answer, res) => {
        if (request.method !== 'POST' || answer.status !== 201) return false;
        // The sandbox's IRI (base58), as a URL on the host nginx says it is.
        res.writeHead(201, { location: `https://idm.school.example${String(answer.headers.location)}` });
        res.end();
        return true;
      };
      const from = relay.requests.length;
      const answer = await proxy.call<Record<string, unknown>>('POST', '/Entity/Group', {
        name: 'Chor Eins',
      });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body._id, 'chor.eins');
      assert.equal(answer.body.account, 'chor.eins');
      assert.equal(
        answer.headers.get('location'),
        `${proxy.url}/iserv/api/Service/Core/Entity/Group/chor.eins`,
      );
      const group = proxy.sandbox.data.groupByAccount('chor.eins');
      assert.ok(group);
      assert.deepEqual(callsSince(from), [
        'POST /iserv/idm/api/v1/groups',
        `GET /iserv/idm/api/v1/groups/${group.id}`,
      ]);
    });

    it('an update answered 204: 200 with the new values', async () => {
      shape = (request, answer, res) => {
        if (request.method !== 'PATCH' || answer.status !== 200) return false;
        res.writeHead(204);
        res.end();
        return true;
      };
      const answer = await proxy.call<Record<string, unknown>>('PUT', '/Entity/Group/chor.eins', {
        name: 'Chor Zwei',
      });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { name: 'Chor Zwei', account: 'chor.eins' });
      assert.equal(proxy.sandbox.data.groupByAccount('chor.eins')?.name, 'Chor Zwei');
    });

    it('a link answered 200 with an empty body: 200 with the links as they are now', async () => {
      shape = (request, answer, res) => {
        if (request.method !== 'POST' || answer.status >= 300) return false;
        res.writeHead(200, { 'content-type': 'application/ld+json; charset=utf-8' });
        res.end();
        return true;
      };
      const answer = await proxy.call<Record<string, unknown>>('POST', '/Entity/Group/chor.eins/link/users', [
        'lena.mueller',
      ]);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body.users, ['lena.mueller']);
    });

    describe('a write done, answered with a body the proxy cannot read: as without a body when the answer says it was done', () => {
      // It was a 502 "an answer the proxy cannot use", though the write was done: a client
      // repeated the create (a conflict or a duplicate), or a reset, losing the temporary password.
      /** POSTs and PATCHes answered with their own status, `type` and `body`, the Location kept. */
      const answerWith = (type: string, body: string) => {
        shape = (request, answer, res) => {
          if ((request.method !== 'POST' && request.method !== 'PATCH') || answer.status >= 300) return false;
          const location = answer.headers.location;
          res.writeHead(answer.status, {
            'content-type': type,
            ...(location === undefined ? {} : { location: String(location) }),
          });
          res.end(body);
          return true;
        };
      };

      it('JSON cut short: a create is read back by its Location (201), an update by its entity (200)', async () => {
        answerWith('application/ld+json', '{oops');
        const created = await proxy.call<Record<string, unknown>>('POST', '/Entity/Group', {
          name: 'Chor Elf',
        });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body._id, 'chor.elf');
        const updated = await proxy.call<Record<string, unknown>>('PUT', '/Entity/Group/chor.elf', {
          name: 'Chor Zwoelf',
        });
        assert.equal(updated.status, 200, updated.text);
        assert.deepEqual(updated.body, { name: 'Chor Zwoelf', account: 'chor.elf' });
      });

      it("an HTML page: a 201 is a create done (read back); a 200 may be a firewall's block page, a 502", async () => {
        answerWith('text/html', '<html><body>Done?</body></html>');
        const created = await proxy.call<Record<string, unknown>>('POST', '/Entity/Group', {
          name: 'Chor Dreizehn',
        });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body._id, 'chor.dreizehn');
        const updated = await proxy.call<ErrorBody>('PUT', '/Entity/Group/chor.dreizehn', { name: 'X' });
        assert.equal(updated.status, 502, updated.text);
        assert.doesNotMatch(updated.body.message, /went through/);
      });

      it('a password reset answered with an object, a list or null for the password: the change went through, never handed on', async () => {
        for (const password of [{ TopSecretTemp456: 1 }, ['Temp-1'], null]) {
          shape = (request, answer, res) => {
            if (request.method !== 'POST' || !request.url.pathname.endsWith('/password/reset')) return false;
            res.writeHead(answer.status, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ password }));
            return true;
          };
          const answer = await proxy.call<ErrorBody>('POST', '/User/lena.mueller/password/reset');
          assert.equal(answer.status, 502, `${JSON.stringify(password)}: ${answer.text}`);
          assert.match(answer.body.message, /The change went through .*only its answer failed/);
          assert.doesNotMatch(answer.text, /TopSecretTemp456|Temp-1/);
        }
      });

      it('a password reset: a 502 that says the change went through, sent once', async () => {
        shape = (request, answer, res) => {
          if (request.method !== 'POST' || !request.url.pathname.endsWith('/password/reset')) return false;
          res.writeHead(answer.status, { 'content-type': 'application/json' });
          res.end('{"password": "Temp');
          return true;
        };
        const from = relay.requests.length;
        const answer = await proxy.call<ErrorBody>('POST', '/User/lena.mueller/password/reset');
        assert.equal(answer.status, 502, answer.text);
        assert.match(answer.body.message, /The change went through .*only its answer failed/);
        assert.equal(callsSince(from).filter((call) => call.endsWith('/password/reset')).length, 1);
      });
    });

    it('a create answered 201 with neither body nor Location: a 502 that says the change went through, sent once', async () => {
      shape = (request, answer, res) => {
        if (request.method !== 'POST' || answer.status !== 201) return false;
        res.writeHead(201);
        res.end();
        return true;
      };
      const from = relay.requests.length;
      const answer = await proxy.call<ErrorBody>('POST', '/Entity/Group', { name: 'Chor Drei' });
      assert.equal(answer.status, 502, answer.text);
      assert.match(
        answer.body.message,
        /The change went through \(POST group\); only its answer failed: read the group back instead of repeating the call/,
      );
      assert.ok(proxy.sandbox.data.groupByAccount('chor.drei'));
      assert.deepEqual(callsSince(from), ['POST /iserv/idm/api/v1/groups']);
    });

    describe('a create answered 201 with only a Location whose read-back fails', () => {
      /** POST /roles answers 201 with only its Location; the read-back of the role answers 503. */
      const locationOnly = () => {
        shape = (request, answer, res) => {
          if (request.method !== 'POST' || answer.status !== 201) return false;
          res.writeHead(201, { location: String(answer.headers.location) });
          res.end();
          return true;
        };
        instead = (request, res) => {
          if (request.method !== 'GET' || !/^\/iserv\/idm\/api\/v1\/roles\/[^/]+$/.test(request.url.pathname))
            return false;
          res.writeHead(503, { 'content-type': 'application/problem+json' });
          res.end(JSON.stringify({ title: 'Service Unavailable', status: 503 }));
          return true;
        };
      };

      it('with privileges to grant after it: the role is deleted again by the UUID its Location named', async () => {
        locationOnly();
        const from = relay.requests.length;
        const answer = await proxy.call<ErrorBody>('POST', '/Entity/Role', {
          name: 'Chor Rolle',
          module: 'Core',
          privileges: ['print_colour'],
        });
        assert.equal(answer.status, 502, answer.text);
        assert.match(answer.body.message, /Rolled back/);
        assert.equal(proxy.sandbox.data.roleByName('ROLE_CHOR_ROLLE'), undefined, 'the new role was left');
        const calls = callsSince(from);
        assert.ok(calls.includes('POST /iserv/idm/api/v1/roles'), calls.join('\n'));
        assert.match(calls[calls.length - 1] ?? '', /^DELETE \/iserv\/idm\/api\/v1\/roles\/[\w-]+$/);
      });

      it('without privileges (the second write skipped): the change went through, only its answer failed', async () => {
        locationOnly();
        const answer = await proxy.call<ErrorBody>('POST', '/Entity/Role', {
          name: 'Chor Solo',
          module: 'Core',
        });
        assert.equal(answer.status, 502, answer.text);
        assert.match(
          answer.body.message,
          /The change went through \(create role "Chor Solo"\); only its answer failed/,
        );
        assert.ok(proxy.sandbox.data.roleByName('ROLE_CHOR_SOLO'));
      });
    });
  });

  describe('429 Too Many Requests is a refusal for now, not a failure', () => {
    const later = new Date(Date.now() + 60_000).toUTCString();
    const tooMany = (method: string) => (request: SeenRequest, res: ServerResponse) => {
      if (request.method !== method || !request.url.pathname.startsWith('/iserv/idm/api/v1/')) return false;
      res.writeHead(429, { 'content-type': 'application/problem+json', 'retry-after': later });
      res.end(JSON.stringify({ title: 'Too Many Requests', status: 429 }));
      return true;
    };

    it('a read: 503 with the Retry-After the successor gave (an HTTP date), asked once', async () => {
      instead = tooMany('GET');
      const from = relay.requests.length;
      const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/lena.mueller');
      assert.equal(answer.status, 503, answer.text);
      assert.equal(answer.headers.get('retry-after'), later);
      assert.match(
        answer.body.message,
        /^The successor refuses more requests for now \(too many requests\); request id /,
      );
      assert.equal(callsSince(from).length, 1);
    });

    it('a Retry-After that is neither whole seconds nor an HTTP date of a real day is not passed on; one further off than a day is a day', async () => {
      // `soon`, `-5`, `1.5` reached the legacy client as they came; RFC 9110 allows neither.
      for (const [given, passed] of [
        ['soon', null],
        ['-5', null],
        ['1.5', null],
        ['99999999999999', '86400'],
        // Date.parse takes these (rolled over to 3 March, or a weekday the day does not have).
        ['Tue, 31 Feb 2026 10:00:00 GMT', null],
        ['Sun, 02 Mar 2026 10:00:00 GMT', null],
        ['Mon, 02 Mar 2026 24:00:00 GMT', null],
        ['Tue, 03 Mar 2026 10:00:00 GMT', 'Tue, 03 Mar 2026 10:00:00 GMT'],
        // Further off than a day: a day (a client that honours it would wait 31 years, or 974).
        ['999999999', '86400'],
        ['86400', '86400'],
        ['Wed, 01 Jan 3000 00:00:00 GMT', '86400'],
        [' 17 ', '17'],
      ] as const) {
        instead = (request, res) => {
          if (request.method !== 'GET' || !request.url.pathname.startsWith('/iserv/idm/api/v1/'))
            return false;
          res.writeHead(429, { 'content-type': 'application/problem+json', 'retry-after': given });
          res.end(JSON.stringify({ title: 'Too Many Requests', status: 429 }));
          return true;
        };
        const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/lena.mueller');
        assert.equal(answer.status, 503, answer.text);
        assert.equal(answer.headers.get('retry-after'), passed, given);
      }
    });

    it('a write: 503 with Retry-After, sent once, nothing said about an unknown outcome', async () => {
      instead = tooMany('POST');
      const from = relay.requests.length;
      const answer = await proxy.call<ErrorBody>('POST', '/Entity/Group', { name: 'Chor Vier' });
      assert.equal(answer.status, 503, answer.text);
      assert.equal(answer.headers.get('retry-after'), later);
      assert.doesNotMatch(answer.body.message, /outcome/);
      assert.deepEqual(callsSince(from), ['POST /iserv/idm/api/v1/groups']);
      assert.equal(proxy.sandbox.data.groupByAccount('chor.vier'), undefined);
    });

    it('a later write of a call: the partial-failure report says the same, not "unreachable or failing"', async () => {
      instead = (request, res) =>
        request.method === 'POST' &&
        /^\/iserv\/idm\/api\/v1\/roles\/[^/]+\/privileges$/.test(request.url.pathname)
          ? tooMany('POST')(request, res)
          : false;
      const answer = await proxy.call<ErrorBody>('POST', '/Entity/Role', {
        name: 'Chor Quote',
        module: 'Core',
        privileges: ['print_colour'],
      });
      assert.equal(answer.status, 503, answer.text);
      assert.match(answer.body.message, /refuses more requests for now/);
      assert.doesNotMatch(answer.body.message, /unreachable or failing/);
      assert.match(answer.body.message, /Rolled back/);
      assert.equal(proxy.sandbox.data.roleByName('ROLE_CHOR_QUOTE'), undefined);
      // The operator's log line words it alike.
      const [line] = proxy.logSink
        .lines()
        .filter((entry) => entry.reqId === answer.headers.get('x-request-id'));
      assert.match(
        String(line?.successor),
        /^The successor refuses more requests for now \(too many requests\): /,
      );
    });
  });

  it("a read refused with 403 and a problem document (API Platform's Access Denied): renewed once, then a 502 naming the scope, never the protected entity's 403", async () => {
    // It was the legacy 403 "may not be deleted or updated", for a read, after one call.
    const from = relay.requests.length;
    instead = refusing403(readsOfUsers, 'Access Denied.');
    const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/lena.mueller');
    assert.equal(answer.status, 502, answer.text);
    assert.doesNotMatch(answer.text, /may not be deleted or updated/);
    const calls = callsSince(from).filter((call) => call.startsWith('GET /iserv/idm/api/v1/users'));
    assert.equal(calls.length, 2, `one renewal, one retry: ${calls.join(', ')}`);
    // A write refused the same way is still the entity's protection: the legacy 403.
    instead = refusing403((request) => request.method === 'PATCH', 'Protected.');
    const write = await proxy.call<ErrorBody>('PUT', '/Entity/User/mia.fischer', { firstname: 'M' });
    assert.equal(write.status, 403, write.text);
  });

  it("a create refused with 403 in its collection: a 502 for the proxy's permission, not the protected entity's 403; a link refused so stays the legacy 403", async () => {
    // A create has no entity to protect: it answered 403 "The entity may not be deleted or updated".
    instead = refusing403(
      (request) => request.method === 'POST' && request.url.pathname === '/iserv/idm/api/v1/users',
      'Access Denied.',
    );
    const created = await proxy.call<ErrorBody>('POST', '/Entity/User', {
      username: 'refused.create',
      firstname: 'R',
      lastname: 'C',
    });
    assert.equal(created.status, 502, created.text);
    assert.match(created.body.message, /^The successor refused the proxy's access/);
    assert.doesNotMatch(created.text, /may not be deleted or updated/);
    const [line] = proxy.logSink
      .lines()
      .filter((entry) => entry.reqId === created.headers.get('x-request-id'));
    assert.match(
      String(line?.successor),
      /which protects no entity, so the proxy's client lacks a permission/,
    );
    assert.equal(proxy.sandbox.data.userByAccount('refused.create'), undefined);
    // A write on an entity (a link of a group to a user) refused so is its protection.
    instead = refusing403(
      (request) =>
        request.method === 'POST' &&
        /^\/iserv\/idm\/api\/v1\/users\/[^/]+\/groups$/.test(request.url.pathname),
      'Protected.',
    );
    const linked = await proxy.call<ErrorBody>('POST', '/Entity/User/mia.fischer/link/groups', ['lehrer']);
    assert.equal(linked.status, 403, linked.text);
    // A create's later write on the entity it created (a new role's grants): nothing protects the
    // new role yet, so that 403 is the missing permission too; the create is rolled back.
    instead = refusing403(
      (request) =>
        request.method === 'POST' &&
        /^\/iserv\/idm\/api\/v1\/roles\/[^/]+\/privileges$/.test(request.url.pathname),
      'Access Denied.',
    );
    const granted = await proxy.call<ErrorBody>('POST', '/Entity/Role', {
      name: 'Refused Grant',
      module: 'Core',
      privileges: ['mail_external'],
    });
    assert.equal(granted.status, 502, granted.text);
    assert.match(granted.body.message, /^The successor refused the proxy's access/);
    assert.match(granted.body.message, /Rolled back/);
    assert.doesNotMatch(granted.text, /may not be deleted or updated/);
    assert.equal(proxy.sandbox.data.roleByName('ROLE_REFUSED_GRANT'), undefined);
    // Its undo refused so too: the rollback's failure is the missing permission, not a protection.
    const grants = (request: SeenRequest) =>
      request.method === 'POST' &&
      /^\/iserv\/idm\/api\/v1\/roles\/[^/]+\/privileges$/.test(request.url.pathname);
    const deletesOfRoles = (request: SeenRequest) =>
      request.method === 'DELETE' && /^\/iserv\/idm\/api\/v1\/roles\/[^/]+$/.test(request.url.pathname);
    instead = refusing403((request) => grants(request) || deletesOfRoles(request), 'Access Denied.');
    const stuck = await proxy.call<ErrorBody>('POST', '/Entity/Role', {
      name: 'Stuck Grant',
      module: 'Core',
      privileges: ['mail_external'],
    });
    assert.equal(stuck.status, 502, stuck.text);
    assert.match(stuck.body.message, /Rollback failed \(The successor refused the proxy's access/);
    assert.match(stuck.body.message, /still applied: create role "Stuck Grant"/);
    assert.doesNotMatch(stuck.text, /may not be deleted or updated/);
    // A 404 of the new role's grant: no unknown path entity of the caller's (a create has none),
    // but an answer the proxy cannot use; rolled back.
    instead = (request, res) => {
      if (!grants(request)) return false;
      res.writeHead(404, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'Not Found', status: 404, detail: 'Not Found' }));
      return true;
    };
    const lost = await proxy.call<ErrorBody>('POST', '/Entity/Role', {
      name: 'Lost Grant',
      module: 'Core',
      privileges: ['mail_external'],
    });
    assert.equal(lost.status, 502, lost.text);
    assert.match(lost.body.message, /^The successor gave an answer the proxy cannot use/);
    assert.match(lost.body.message, /Rolled back/);
    assert.equal(proxy.sandbox.data.roleByName('ROLE_LOST_GRANT'), undefined);
  });

  it('with an API key: a read refused with 403 is a 502 that names the key, after one call (no token to renew); a write refused so is the legacy 403', async () => {
    const keyed = await startUserProxy({
      successor: {
        baseUrl: `${relay.url}/iserv/idm/api/v1`,
        auth: { type: 'apiKey', key: proxy.sandbox.apiKey },
      },
    });
    try {
      instead = refusing403(readsOfUsers, 'Access Denied.');
      const from = relay.requests.length;
      const answer = await keyed.call<ErrorBody>('GET', '/Entity/User/lena.mueller');
      assert.equal(answer.status, 502, answer.text);
      assert.match(answer.body.message, /^The successor refused the proxy's access/);
      assert.doesNotMatch(answer.text, /may not be deleted or updated/);
      // The operator's log names the key (no scope to grant, no token to renew).
      const [line] = keyed.logSink
        .lines()
        .filter((entry) => entry.reqId === answer.headers.get('x-request-id'));
      assert.match(String(line?.successor), /\(403\) for the API key: Access Denied\.$/);
      assert.deepEqual(
        callsSince(from).filter((call) => call.startsWith('GET /iserv/idm/api/v1/users')),
        ['GET /iserv/idm/api/v1/users'],
      );
      instead = refusing403((request) => request.method === 'PATCH', 'Protected.');
      const write = await keyed.call<ErrorBody>('PUT', '/Entity/User/mia.fischer', { firstname: 'M' });
      assert.equal(write.status, 403, write.text);
    } finally {
      await keyed.close();
    }
  });

  it('a read refused with 400 (a mapping that does not fit the successor): a 502 the log explains, not a 400 that blames the caller', async () => {
    // A field table naming an attribute the successor lacks answered every GET 400 "The successor
    // rejected the request", counted as a client error, with no "request failed" line.
    instead = (request, res) => {
      if (!readsOfUsers(request)) return false;
      res.writeHead(400, { 'content-type': 'application/problem+json' });
      res.end(
        JSON.stringify({ title: 'An error occurred', status: 400, detail: 'Unknown attribute "firstName".' }),
      );
      return true;
    };
    const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/lena.mueller');
    assert.equal(answer.status, 502, answer.text);
    assert.match(answer.body.message, /^The successor refused a read the proxy sent .*request id /);
    const [line] = proxy.logSink
      .lines()
      .filter(
        (entry) => entry.reqId === answer.headers.get('x-request-id') && entry.msg === 'request failed',
      );
    assert.match(JSON.stringify(line), /Unknown attribute \\"firstName\\"/);
    // A write refused so is still the caller's 400 with the successor's reason.
    instead = (request, res) => {
      if (request.method !== 'PATCH') return false;
      res.writeHead(422, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'An error occurred', status: 422, detail: 'Not acceptable.' }));
      return true;
    };
    const write = await proxy.call<ErrorBody>('PUT', '/Entity/User/mia.fischer', { firstname: 'M' });
    assert.equal(write.status, 400, write.text);
  });

  it('asks for uncompressed answers: a server free to compress (no Accept-Encoding) gzipped them into a 502', async () => {
    // RFC 9110 12.5.3: without Accept-Encoding any content coding is acceptable; the proxy decodes
    // none. This server compresses whatever it may, as the RFC lets it.
    shape = (request, answer, res) => {
      const accepted = request.headers['accept-encoding'];
      if (accepted !== undefined && !/gzip|\*/.test(accepted)) return false;
      res.writeHead(answer.status, { ...answer.headers, 'content-encoding': 'gzip' });
      res.end(gzipSync(answer.body));
      return true;
    };
    const from = relay.requests.length;
    const user = await proxy.call<Record<string, unknown>>('GET', '/Entity/User/lena.mueller');
    assert.equal(user.status, 200, user.text);
    assert.equal(user.body.username, 'lena.mueller');
    const list = await proxy.call<unknown[]>('GET', '/Entity/Group');
    assert.equal(list.status, 200, list.text);
    assert.ok(list.body.length > 0);
    const seen = relay.requests.slice(from);
    assert.ok(seen.length >= 2);
    for (const request of seen) assert.equal(request.headers['accept-encoding'], 'identity');
  });
});
