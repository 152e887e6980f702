import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { obj, sandbox } from './sandbox-helpers.js';

const BASE = '/iserv/idm/api/v1';

/** Every method + path the sandbox serves (reference/idm-api-v1.md, known and assumed). */
const EXPECTED = [
  'get /users',
  'post /users',
  'get /users/{id}',
  'patch /users/{id}',
  'delete /users/{id}',
  'post /users/{id}/restore',
  'post /users/{id}/password',
  'post /users/{id}/password/reset',
  'post /users/{id}/admin_password',
  'delete /users/{id}/admin_password',
  'post /users/{id}/admin_password/reset',
  'get /users/{id}/groups',
  'post /users/{id}/groups',
  'delete /users/{id}/groups/{groupId}',
  'post /users/{id}/roles',
  'delete /users/{id}/roles/{roleId}',
  'post /users/{id}/privileges',
  'delete /users/{id}/privileges/{privilegeId}',
  'get /groups',
  'post /groups',
  'get /groups/{id}',
  'patch /groups/{id}',
  'delete /groups/{id}',
  'post /groups/{id}/restore',
  'get /groups/{id}/members',
  'post /groups/{id}/members',
  'delete /groups/{id}/members/{userId}',
  'post /groups/{id}/privileges',
  'delete /groups/{id}/privileges/{privilegeId}',
  'post /groups/{id}/group_flags',
  'delete /groups/{id}/group_flags/{flagId}',
  'get /roles',
  'post /roles',
  'get /roles/{id}',
  'delete /roles/{id}',
  'get /roles/{id}/users',
  'post /roles/{id}/privileges',
  'delete /roles/{id}/privileges/{privilegeId}',
  'get /privileges',
  'get /privileges/{id}',
  'get /group_flags',
  'get /group_flags/{id}',
  'get /lookup/users',
  'get /lookup/groups',
  'get /docs.jsonopenapi',
  'get /docs.json',
];

describe('sandbox OpenAPI document', () => {
  let sb: RunningSandbox;
  let doc: Record<string, unknown>;
  before(async () => {
    sb = await sandbox({ seed: false });
    const res = await fetch(`${sb.apiBaseUrl}/docs.jsonopenapi`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/vnd\.openapi\+json/);
    doc = obj(await res.json());
  });
  after(() => sb.close());

  it('is a valid OpenAPI 3.1 document, the same at docs.json', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const result = await new Validator().validate(structuredClone(doc));
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1));
    const json = await fetch(`${sb.apiBaseUrl}/docs.json`);
    assert.match(json.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await json.json(), doc);
  });

  it('lists exactly the paths and methods the sandbox serves', () => {
    const served: string[] = [];
    for (const [path, item] of Object.entries(obj(doc.paths))) {
      assert.ok(path.startsWith(`${BASE}/`), path);
      for (const method of Object.keys(obj(item))) served.push(`${method} ${path.slice(BASE.length)}`);
    }
    assert.deepEqual(served.sort(), [...EXPECTED].sort());
  });

  it('describes each resource with its properties', () => {
    const schemas = obj(obj(doc.components).schemas);
    const props = (name: string) => Object.keys(obj(obj(schemas[name]).properties));
    assert.deepEqual(props('User'), [
      'hexUuid',
      'uuid',
      'user',
      'firstname',
      'lastname',
      'auxInfo',
      'importId',
      'emailAddress',
      'locked',
      'deleted',
      'status',
      'type',
      'created',
      'createdBy',
      'lastLogin',
      'deletedBy',
      'groups',
      'roles',
      'privileges',
    ]);
    assert.ok(
      props('Group').includes('members') &&
        props('Group').includes('flags') &&
        props('Group').includes('owner'),
    );
    assert.deepEqual(props('Role'), ['hexUuid', 'uuid', 'role', 'name', 'module', 'privileges']);
    assert.ok(props('Privilege').includes('inverted'));
    assert.deepEqual(props('GroupFlag'), ['hexUuid', 'uuid', 'name', 'title']);
    assert.deepEqual(obj(obj(obj(schemas.User).properties).status).enum, [
      'active',
      'registered',
      'inactive',
    ]);
  });

  it('documents request bodies, filters, pagination and security per operation', () => {
    const paths = obj(doc.paths);
    const createUser = obj(obj(paths[`${BASE}/users`]).post);
    const body = obj(obj(obj(obj(createUser.requestBody).content)['application/json']).schema);
    assert.deepEqual(body.required, ['user', 'firstname', 'lastname']);
    assert.equal(body.additionalProperties, false);
    assert.deepEqual(createUser.security, [{ oauth2: ['iserv:idm:api-write'] }, { apiKey: [] }]);
    const patch = obj(obj(paths[`${BASE}/groups/{id}`]).patch);
    assert.deepEqual(Object.keys(obj(obj(patch.requestBody).content)), ['application/merge-patch+json']);
    const listUsers = obj(obj(paths[`${BASE}/users`]).get);
    const names = (listUsers.parameters as { name: string }[]).map((p) => p.name);
    for (const name of [
      '_attributes',
      'page',
      'itemsPerPage',
      'user',
      'user[]',
      'uuid',
      'deleted',
      'lastname[icontains]',
    ]) {
      assert.ok(names.includes(name), name);
    }
    assert.deepEqual(listUsers.security, [{ oauth2: ['iserv:idm:api-read'] }, { apiKey: [] }]);
    const flows = obj(obj(obj(obj(doc.components).securitySchemes).oauth2).flows);
    assert.equal(obj(flows.clientCredentials).tokenUrl, sb.tokenEndpoint);
    assert.deepEqual(obj(obj(paths[`${BASE}/docs.json`]).get).security, []);
  });
});
