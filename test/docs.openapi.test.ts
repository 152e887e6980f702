// The OpenAPI 3.1 document and the docs assets over real HTTP, checked by a real OpenAPI validator.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { SmartRouter } from 'hono/router/smart-router';
import { createApp } from '../src/app.js';
import { LEGACY_OPERATIONS } from '../src/legacy/operations.js';
import { type AuthHarness, basic, call, closeSharedSandbox, startHarness } from './auth-helpers.js';
import { parseRaw, rawExchange } from './raw-http.js';

after(closeSharedSandbox);

interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  components: { securitySchemes: Record<string, unknown> };
  paths: Record<
    string,
    Record<string, { operationId: string; responses: Record<string, unknown>; security: unknown }>
  >;
}

interface JsonSchema {
  maxLength?: number;
  format?: string;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
}

describe('interactive docs: OpenAPI document and assets', () => {
  let h: AuthHarness;
  let password = '';
  const auth = () => ({ user: 'docs', password });
  let document: OpenApiDocument;

  before(async () => {
    h = await startHarness({ config: { legacy: { namespaces: ['Service', 'IServ'] } } });
    password = await h.addUser('docs', ['127.0.0.0/8']);
    const response = await call(`${h.url}/iserv/api/docs/openapi.json`, auth());
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    document = response.body as OpenApiDocument;
  });
  after(() => h?.close());

  it('requires API-user credentials for the page, the document and the assets', async () => {
    for (const path of [
      '/docs',
      '/docs/',
      '/docs/openapi.json',
      '/docs/swagger-ui-bundle.js',
      '/docs/docs.js',
    ]) {
      const response = await call(`${h.url}/iserv/api${path}`);
      assert.equal(response.status, 401, path);
      assert.match(response.headers.get('www-authenticate') ?? '', /^Basic /);
    }
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    assert.match(document.openapi, /^3\.1\./);
    const validator = new Validator();
    const result = await validator.validate(
      structuredClone(document) as unknown as Parameters<Validator['validate']>[0],
    );
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, '3.1');
  });

  it('documents every legacy operation, with its id, method and path', () => {
    assert.ok(LEGACY_OPERATIONS.length > 0, 'no legacy operations yet');
    for (const operation of LEGACY_OPERATIONS) {
      const documented = document.paths[operation.path]?.[operation.method];
      assert.ok(documented, `${operation.method.toUpperCase()} ${operation.path} is missing`);
      assert.equal(documented.operationId, operation.id);
      for (const status of ['401', '403', '429'])
        assert.ok(documented.responses[status], `${operation.id} ${status}`);
    }
    const count = Object.values(document.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
    assert.equal(count, LEGACY_OPERATIONS.length);
  });

  it('documents both form encodings the form operation (SSO) takes, JSON for the others', () => {
    for (const operation of LEGACY_OPERATIONS) {
      const documented = document.paths[operation.path]?.[operation.method] as
        | { requestBody?: { content: Record<string, unknown> } }
        | undefined;
      const types = Object.keys(documented?.requestBody?.content ?? {});
      if (operation.body === undefined) assert.deepEqual(types, [], operation.id);
      else if (operation.body.kind === 'json') assert.deepEqual(types, ['application/json'], operation.id);
      else
        assert.deepEqual(types, ['application/x-www-form-urlencoded', 'multipart/form-data'], operation.id);
    }
    assert.ok(LEGACY_OPERATIONS.some((operation) => operation.body && operation.body.kind !== 'json'));
  });

  it('documents the 400 and 413 every operation other than a GET can answer, as the proxy answers them', async () => {
    // Seed 7: 400 on every operation. An operation that takes no body (DELETE, restore, the
    // password resets) refuses one with 400, and every request body is bounded by the 413; the
    // document listed neither on those, so a client generated from it knew no such answer.
    const base = `${h.url}/iserv/api/Service`;
    const stray = await call(`${base}/Core/Entity/User/admin`, { ...auth(), method: 'DELETE', body: 'x' });
    assert.equal(stray.status, 400);
    const large = await call(`${base}/Core/User/admin/restore`, {
      ...auth(),
      method: 'POST',
      body: 'x'.repeat(h.config.server.bodyLimitBytes + 1),
    });
    assert.equal(large.status, 413);
    for (const operation of LEGACY_OPERATIONS) {
      const documented = document.paths[operation.path]?.[operation.method];
      if (operation.method === 'get') {
        assert.equal(documented?.responses['413'], undefined, operation.id);
        continue;
      }
      for (const status of ['400', '413'])
        assert.ok(documented?.responses[status], `${operation.id} does not document ${status}`);
    }
  });

  it('documents a 400 on every operation, the reads included, as the proxy answers it', async () => {
    // Seed 7: 400 on every operation. The reads of one entity listed none, yet a request the
    // proxy cannot read (here HTTP/1.1 without Host) is a 400 on them as on every path.
    const authorization = basic('docs', password);
    for (const path of [
      '/Core/Entity/User/admin',
      '/Core/Entity/Group/admins',
      '/Core/Entity/Role/ROLE_ADMIN',
      '/Core/Entity/Privilege/core_manage_users',
    ]) {
      const answer = parseRaw(
        await rawExchange(
          h.url,
          `GET /iserv/api/Service${path} HTTP/1.1\r\nAuthorization: ${authorization}\r\nConnection: close\r\n\r\n`,
        ),
      );
      assert.equal(answer.statusLine, 'HTTP/1.1 400 Bad Request', path);
      assert.match((JSON.parse(answer.body) as { message: string }).message, /^Malformed request: /);
    }
    for (const operation of LEGACY_OPERATIONS) {
      const documented = document.paths[operation.path]?.[operation.method]?.responses['400'] as
        | { description?: string; content?: unknown }
        | undefined;
      assert.ok(documented?.content, `${operation.id} does not document 400`);
      assert.match(
        String(documented.description),
        /Malformed request: an HTTP\/1\.1 request without `Host`/,
        operation.id,
      );
      if (operation.method === 'get')
        assert.match(String(documented.description), /a read has no other 400/, operation.id);
    }
  });

  it('documents `extended` as the object the seed declares, and the plain forms the proxy takes too', async () => {
    // Seed 4: "a query parameter of type object". It was declared a string, with no style for
    // `extended[a]=1`, which the proxy takes as well as `extended=1`.
    const lists = LEGACY_OPERATIONS.filter((op) => op.answer.result === 'collection');
    assert.equal(lists.length, 4);
    for (const operation of lists) {
      const documented = document.paths[operation.path]?.[operation.method] as unknown as {
        parameters: {
          name: string;
          in: string;
          style?: string;
          explode?: boolean;
          description: string;
          schema: unknown;
        }[];
      };
      const extended = documented.parameters.find((p) => p.name === 'extended');
      assert.ok(extended, operation.id);
      assert.equal(extended.in, 'query');
      assert.equal(extended.style, 'deepObject', operation.id);
      assert.equal(extended.explode, true, operation.id);
      assert.deepEqual(extended.schema, {
        anyOf: [{ type: 'string' }, { type: 'object', additionalProperties: { type: 'string' } }],
        description: extended.description,
      });
      for (const form of ['`extended`', '`extended=1`', '`extended[]=`', '`extended[all]=1`'])
        assert.ok(extended.description.includes(form), `${operation.id}: ${form}`);
    }
    for (const query of ['', '?extended=1', '?extended[all]=1', '?extended[]=', '?extended']) {
      const users = await call(`${h.url}/iserv/api/Service/Core/Entity/User${query}`, auth());
      assert.equal(users.status, 200, query);
      assert.equal(Array.isArray((users.body as { roles?: unknown }[])[0]?.roles), query !== '', query);
    }
  });

  it("describes each 400 as the operation answers it: SSO's form and user refusals, a list's no body", async () => {
    // The SSO operation said "malformed JSON, wrong types, unknown fields, unknown IDs in the
    // body" (it takes no JSON) and named none of its refusals; the lists, a body they never read.
    const description = (path: string, method: string) =>
      String(
        (document.paths[path]?.[method]?.responses['400'] as { description?: unknown } | undefined)
          ?.description,
      );
    const sso = description('/Sso/authenticate', 'post');
    const refused = await call(`${h.url}/iserv/api/Service/Sso/authenticate`, {
      ...auth(),
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'username=nobody.here',
    });
    assert.equal(refused.status, 400);
    assert.match(String((refused.body as { message?: unknown }).message), /^Unknown user "nobody\.here"/);
    for (const words of [
      'Unknown user "x"',
      'User "x" is deleted',
      'User "x" is locked',
      'form data',
      'username',
    ])
      assert.ok(sso.includes(words), `${words}: ${sso}`);
    assert.doesNotMatch(sso, /malformed JSON/);
    for (const operation of LEGACY_OPERATIONS.filter((op) => op.answer.result === 'collection'))
      assert.doesNotMatch(description(operation.path, operation.method), /in the body|JSON/, operation.id);
  });

  it('words each 403 for its kind: only the user writes refuse a soft-deleted user', async () => {
    // Group and role operations said "a soft-deleted user may not be changed until restored",
    // and so did the user's DELETE, which a deleted user takes again (204).
    const described = (id: string) => {
      const operation = LEGACY_OPERATIONS.find((op) => op.id === id);
      assert.ok(operation, id);
      const response = document.paths[operation.path]?.[operation.method]?.responses['403'] as
        | { description?: string }
        | undefined;
      return String(response?.description);
    };
    for (const [id, words] of [
      ['group.update', 'The group may not be updated'],
      ['group.delete', 'The group may not be deleted'],
      ['role.delete', 'The role may not be deleted'],
      ['user.delete', 'The user may not be deleted'],
    ] as const) {
      assert.ok(described(id).startsWith(words), `${id}: ${described(id)}`);
      assert.doesNotMatch(described(id), /soft-deleted|restore/, id);
    }
    const userWrites = LEGACY_OPERATIONS.filter(
      (op) =>
        op.tag === 'User' &&
        op.method !== 'get' &&
        !['user.create', 'user.delete', 'user.restore'].includes(op.id),
    );
    assert.equal(userWrites.length, 12);
    for (const { id } of userWrites) {
      assert.match(
        described(id),
        /^The user may not be (updated|changed): .*soft-deleted \(restore it first\)/,
        id,
      );
    }
    // As the proxy answers: a soft-deleted group takes a PUT, a soft-deleted user does not.
    const base = `${h.url}/iserv/api/Service/Core/Entity`;
    const json = { 'content-type': 'application/json' };
    const created = await call(`${base}/Group`, {
      ...auth(),
      method: 'POST',
      headers: json,
      body: JSON.stringify({ name: 'Docs Probe' }),
    });
    assert.equal(created.status, 201, created.text);
    const group = `${base}/Group/docs.probe`;
    assert.equal((await call(group, { ...auth(), method: 'DELETE' })).status, 204);
    const renamed = await call(group, {
      ...auth(),
      method: 'PUT',
      headers: json,
      body: '{"name":"Docs Probe 2"}',
    });
    assert.equal(renamed.status, 200, renamed.text);
    const user = await call(`${base}/User/ben.krause`, {
      ...auth(),
      method: 'PUT',
      headers: json,
      body: '{"auxInfo":"x"}',
    });
    assert.equal(user.status, 403, user.text);
  });

  /** The documented JSON schema of a request body. */
  function bodySchema(path: string, method: string): JsonSchema {
    const operation = document.paths[path]?.[method] as unknown as {
      requestBody: { content: Record<string, { schema: JsonSchema }> };
    };
    const schema = operation.requestBody.content['application/json']?.schema;
    assert.ok(schema, `${method} ${path} has no JSON body`);
    return schema;
  }

  it("types the seed's dates as date and date-time", () => {
    const formats = (path: string) => {
      const answer = (document.paths[path]?.get?.responses['200'] ?? {}) as {
        content?: Record<string, { schema: JsonSchema }>;
      };
      const schema = answer.content?.['application/json']?.schema;
      assert.ok(schema, `GET ${path} has no JSON answer`);
      return Object.fromEntries(
        Object.entries(schema.properties ?? {})
          .filter(([, field]) => field.format !== undefined)
          .map(([name, field]) => [name, field.format]),
      );
    };
    assert.deepEqual(formats('/Core/Entity/User/{id}'), {
      created: 'date',
      lastlogin: 'date-time',
      deleted: 'date',
    });
    assert.deepEqual(formats('/Core/Entity/Group/{id}'), { created: 'date', deleted: 'date' });
  });

  it('documents one length limit per writable field, the same on create and update', () => {
    const limits = (schema: JsonSchema) =>
      Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, v.maxLength]));
    const user = {
      username: 64,
      firstname: 255,
      lastname: 255,
      status: undefined,
      type: 255,
      importId: 255,
      auxInfo: 255,
    };
    assert.deepEqual(limits(bodySchema('/Core/Entity/User', 'post')), user);
    assert.deepEqual(limits(bodySchema('/Core/Entity/User/{id}', 'put')), user);
    assert.deepEqual(limits(bodySchema('/Core/Entity/Group', 'post')), { name: 64 });
    assert.deepEqual(limits(bodySchema('/Core/Entity/Group/{id}', 'put')), { name: 64, account: 64 });
    assert.deepEqual(limits(bodySchema('/Core/Entity/Role', 'post')), {
      name: 50,
      module: 255,
      privileges: undefined,
    });
  });

  it('documents the limit of legacy IDs in paths and link bodies in bytes, as the proxy checks it', async () => {
    // The limit is 255 bytes URL-encoded, not 255 characters: `maxLength: 255` said 255 `ä`
    // would do, and 60 are refused. The description says it; no `maxLength` claims otherwise.
    const limit = 'at most 255 bytes URL-encoded';
    let checked = 0;
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const { parameters = [] } = operation as unknown as {
          parameters?: { in: string; schema: JsonSchema & { minLength?: number; description?: string } }[];
        };
        const schemas = parameters.filter((p) => p.in === 'path').map((p) => p.schema);
        if (path.includes('/link/')) {
          const items = bodySchema(path, method).items as JsonSchema & {
            minLength?: number;
            description?: string;
          };
          schemas.push(items);
        }
        for (const schema of schemas) {
          checked++;
          assert.equal(schema.maxLength, undefined, `${method} ${path}`);
          assert.equal(schema.minLength, 1, `${method} ${path}`);
          assert.ok(schema.description?.includes(limit), `${method} ${path}: ${schema.description}`);
        }
      }
    }
    assert.ok(checked > 40, String(checked));
    const base = `${h.url}/iserv/api/Service/Core/Entity`;
    const fits = await call(`${base}/User/${encodeURIComponent('ä'.repeat(42))}`, auth());
    assert.equal(fits.status, 404);
    assert.match((fits.body as { message: string }).message, /^No user with ID/);
    const tooLong = await call(`${base}/User/${encodeURIComponent('ä'.repeat(43))}`, auth());
    assert.equal(tooLong.status, 404);
    assert.deepEqual((tooLong.body as { errors?: unknown }).errors, [
      { path: 'path.id', message: 'must be at most 255 bytes URL-encoded' },
    ]);
    const linked = await call(`${base}/Group/admins/link/users`, {
      ...auth(),
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(['ä'.repeat(43)]),
    });
    assert.equal(linked.status, 400);
    assert.deepEqual((linked.body as { errors?: unknown }).errors, [
      { path: 'body.0', message: 'must be at most 255 bytes URL-encoded' },
    ]);
  });

  it('names Basic auth, the first namespace as server and every namespace alias', () => {
    assert.deepEqual(document.components.securitySchemes.basicAuth, {
      type: 'http',
      scheme: 'basic',
      description: 'API-user name and password, created on the server with `idm-compat apiuser add`',
    });
    assert.deepEqual(
      document.servers.map((s) => s.url),
      ['../Service'],
    );
    // Relative to the document, so also under a reverse proxy's path prefix.
    for (const [served, api] of [
      ['http://127.0.0.1:8080/iserv/api/docs/openapi.json', '/iserv/api/Service'],
      ['https://school.example/idm-compat/iserv/api/docs/openapi.json', '/idm-compat/iserv/api/Service'],
    ])
      assert.equal(new URL(document.servers[0]?.url ?? '', served).pathname, api);
    assert.match(document.info.description, /`\/iserv\/api\/Service`, `\/iserv\/api\/IServ`/);
    assert.equal(document.info.version, '1.6.0');
  });

  it('serves the page and Swagger UI from the proxy itself (no CDN), under a CSP', async () => {
    const redirect = await call(`${h.url}/iserv/api/docs`, auth());
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.get('location'), 'docs/', 'relative: also under a path prefix');
    assert.equal(new URL('docs/', `${h.url}/iserv/api/docs`).pathname, '/iserv/api/docs/');
    assert.equal(
      new URL('docs/', 'https://school.example/idm-compat/iserv/api/docs').pathname,
      '/idm-compat/iserv/api/docs/',
    );

    const page = await call(`${h.url}/iserv/api/docs/`, auth());
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    assert.doesNotMatch(page.text, /https?:\/\//, 'no absolute (CDN) URLs in the page');
    const referenced = [...page.text.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1] ?? '');
    assert.ok(referenced.includes('swagger-ui-bundle.js') && referenced.includes('swagger-ui.css'));
    for (const asset of referenced) {
      const response = await call(`${h.url}/iserv/api/docs/${asset}`, auth());
      assert.equal(response.status, 200, asset);
    }
    const bundle = await fetch(`${h.url}/iserv/api/docs/swagger-ui-bundle.js`, {
      headers: { authorization: `Basic ${Buffer.from(`docs:${password}`).toString('base64')}` },
    });
    assert.match(bundle.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.ok((await bundle.arrayBuffer()).byteLength > 100_000);
  });

  it("keeps the app on hono's RegExpRouter (a parameter route among the docs would move every request to the slower TrieRouter)", async () => {
    const app = createApp(h.services);
    assert.equal((await app.request('/healthz')).status, 200);
    assert.equal((app.router as SmartRouter<unknown>).activeRouter.name, 'RegExpRouter');
  });

  it('answers HEAD, 404 for other files whatever the method, and 405 only on its known paths', async () => {
    assert.equal(
      (await call(`${h.url}/iserv/api/docs/openapi.json`, { ...auth(), method: 'HEAD' })).status,
      200,
    );
    for (const file of ['index.html', 'swagger-ui.js.map', '..%2Fpackage.json', 'package.json', 'a/b']) {
      const response = await call(`${h.url}/iserv/api/docs/${file}`, auth());
      assert.equal(response.status, 404, file);
      assert.equal((response.body as { code: number }).code, 404);
    }
    const post = await call(`${h.url}/iserv/api/docs/`, { ...auth(), method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
    // SPEC 3: 405 is a wrong method on a known path. An unknown path below the docs answered 405
    // (with an Allow for a resource that does not exist) to every method but GET and HEAD.
    for (const method of ['PUT', 'DELETE', 'OPTIONS', 'POST', 'PATCH']) {
      for (const path of ['/docs', '/docs/', '/docs/openapi.json', '/docs/swagger-ui.css']) {
        const known = await call(`${h.url}/iserv/api${path}`, { ...auth(), method });
        assert.equal(known.status, 405, `${method} ${path}`);
        assert.equal(known.headers.get('allow'), 'GET, HEAD', `${method} ${path}`);
      }
      for (const path of ['/docs/does-not-exist', '/docs/a/b', '/docs/openapi.json/x']) {
        const unknown = await call(`${h.url}/iserv/api${path}`, { ...auth(), method });
        assert.equal(unknown.status, 404, `${method} ${path}: ${unknown.text}`);
        assert.equal(unknown.headers.get('allow'), null, `${method} ${path}`);
        assert.deepEqual(unknown.body, { code: 404, message: `No such path: "/iserv/api${path}"` });
        // Authentication still comes first.
        assert.equal((await call(`${h.url}/iserv/api${path}`, { method })).status, 401, `${method} ${path}`);
      }
    }
  });
});
