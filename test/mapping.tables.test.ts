// The mapping tables themselves: the shipped profile loads and covers the legacy operations, the
// JSON Schema is up to date and accepts every shipped file, a broken profile is reported with
// file, JSON path and reason, and no successor name of the default profile is written in code.
import assert from 'node:assert/strict';
import {
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { LEGACY_OPERATIONS, REQUIRED_OPERATIONS } from '../src/legacy/operations.js';
import { MappingError } from '../src/mapping/errors.js';
import { readThroughValues, toLegacyDate, toLegacyDateTime, writeValue } from '../src/mapping/formats.js';
import { loadProfile } from '../src/mapping/load.js';
import { mappingJsonSchema } from '../src/mapping/schema.js';
import { compileTemplate, renderTemplate, renderText, TemplateError } from '../src/mapping/template.js';
import { tempDir } from './temp-dir.js';
import { ALT_PROFILE, DEFAULT_PROFILE } from './user-helpers.js';

type Json = Record<string, unknown>;

function jsonFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.json'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** A temp copy of the default profile with one file changed; answers the MappingError it causes. */
function brokenProfile(
  file: string,
  change: (json: Json) => Json | string | undefined,
  served: Parameters<typeof loadProfile>[1] = [],
): MappingError {
  const dir = path.join(tempDir('mapping'), 'broken');
  cpSync(DEFAULT_PROFILE, dir, { recursive: true });
  const target = path.join(dir, file);
  const changed = change(JSON.parse(readFileSync(target, 'utf8')) as Json);
  if (changed === undefined) rmSync(target);
  else writeFileSync(target, typeof changed === 'string' ? changed : JSON.stringify(changed, null, 2));
  try {
    loadProfile(dir, served);
  } catch (error) {
    assert.ok(error instanceof MappingError, String(error));
    return error;
  }
  assert.fail('the broken profile loaded');
}

describe('the shipped mapping profile', () => {
  it('loads and maps every legacy operation the proxy serves', () => {
    for (const dir of [DEFAULT_PROFILE, ALT_PROFILE])
      assert.doesNotThrow(() => loadProfile(dir, REQUIRED_OPERATIONS));
    const profile = loadProfile(DEFAULT_PROFILE);
    assert.equal(profile.name, 'iserv-idm-v1');
    assert.deepEqual([...profile.kinds.keys()].sort(), ['flag', 'group', 'privilege', 'role', 'user']);
    for (const operation of LEGACY_OPERATIONS) {
      assert.ok(profile.operations.has(operation.id), `no operation table entry for ${operation.id}`);
    }
    const users = LEGACY_OPERATIONS.filter((op) => op.id.startsWith('user.'));
    assert.equal(users.length, 17);
    for (const [resource, count] of [
      ['group', 11],
      ['role', 6],
      ['privilege', 6],
    ] as const) {
      assert.equal(
        LEGACY_OPERATIONS.filter((op) => op.id.startsWith(`${resource}.`)).length,
        count,
        resource,
      );
    }
    assert.equal(profile.settings.adminRole, 'ROLE_ADMIN');
  });

  it('has an up-to-date JSON Schema (npx tsx scripts/write-schemas.ts) that accepts every shipped file', () => {
    const written = JSON.parse(readFileSync('mappings/mapping.schema.json', 'utf8'));
    assert.deepEqual(written, mappingJsonSchema(), 'mappings/mapping.schema.json is stale');
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    const validate = ajv.compile(written);
    for (const file of [...jsonFiles(DEFAULT_PROFILE), ...jsonFiles(ALT_PROFILE)]) {
      const ok = validate(JSON.parse(readFileSync(file, 'utf8')));
      assert.ok(ok, `${file}: ${JSON.stringify(validate.errors)}`);
    }
    assert.equal(
      validate({ table: 'values', name: 'x', entries: [] }),
      false,
      'an empty value table is refused',
    );
  });

  it('writes no successor path, attribute, parameter, body key or value of the default profile in code', () => {
    const names = new Set<string>();
    const add = (value: unknown) => {
      if (typeof value === 'string' && value !== '') names.add(value);
    };
    const walkKeys = (value: unknown) => {
      if (Array.isArray(value)) value.forEach(walkKeys);
      else if (value && typeof value === 'object')
        for (const [key, item] of Object.entries(value)) {
          add(key);
          walkKeys(item);
        }
    };
    for (const file of jsonFiles(DEFAULT_PROFILE)) {
      const json = JSON.parse(readFileSync(file, 'utf8')) as Json;
      switch (json.table) {
        case 'profile': {
          const successor = json.successor as Json;
          add(successor.attributesParam);
          Object.values(successor.paging as Json).forEach(add);
          (successor.openApi as string[]).forEach(add);
          add(successor.readinessPath);
          Object.values(json.settings as Json).forEach(add);
          break;
        }
        case 'entities':
          for (const kind of Object.values(json.kinds as Record<string, Json>)) {
            [
              kind.collection,
              kind.item,
              kind.iri,
              kind.uuidAttribute,
              (kind.uuidFilter as Json).param,
            ].forEach(add);
          }
          break;
        case 'ids':
          for (const id of Object.values(json.kinds as Record<string, Json>))
            [id.attribute, id.filter, id.filterMany].forEach(add);
          break;
        case 'values':
          for (const entry of json.entries as Json[]) add(entry.successor);
          break;
        case 'fields':
          for (const field of Object.values(json.fields as Record<string, Json>)) {
            add(field.attribute);
            add((field.contains as Json | undefined)?.key);
          }
          break;
        case 'operations':
          for (const op of Object.values(json.operations as Record<string, Json>)) {
            for (const step of op.steps as Json[]) {
              add(step.path);
              Object.keys((step.query as Json | undefined) ?? {}).forEach(add);
              walkKeys(step.body);
            }
          }
          break;
      }
    }
    // Names the legacy contract shares with the successor (firstname, status, …) and words of the
    // mapping language itself may appear in code; everything else successor-specific may not.
    const allowed = new Set(['uuid', 'type', 'password']);
    for (const file of jsonFiles(DEFAULT_PROFILE)) {
      const json = JSON.parse(readFileSync(file, 'utf8')) as Json;
      if (json.table === 'fields') for (const name of Object.keys(json.fields as Json)) allowed.add(name);
    }
    for (const name of allowed) names.delete(name);
    const sources = [
      'src/mapping',
      'src/legacy/user',
      'src/legacy/group',
      'src/legacy/role',
      'src/legacy/privilege',
      'src/legacy/link.ts',
      'src/legacy/sso',
      'src/sso',
      'src/legacy/translate.ts',
      'src/legacy/responses.ts',
      'src/successor',
      'src/ops',
      'src/cli',
      'src/cli.ts',
      'src/server.ts',
      'src/app.ts',
      'src/services.ts',
    ].flatMap((entry) =>
      entry.endsWith('.ts')
        ? [entry]
        : readdirSync(entry)
            .filter((f) => f.endsWith('.ts'))
            .map((f) => path.join(entry, f)),
    );
    // Words that are idm-compat's own in one file, not the successor's, and why.
    const ownWords: Record<string, string[]> = {
      // The API user's own record (`apiuser list --json`), kept in idm-compat's store, and the
      // scope of its own failed-login counter (`blocks[].scope`, docs/auth.md).
      [path.join('src', 'cli', 'apiuser.ts')]: ['lastLogin', 'user'],
      // The `--user` option of `idm-compat usage` (an API user of idm-compat's own).
      [path.join('src', 'cli', 'usage.ts')]: ['user'],
      // The `--user` option of `idm-compat replay` (the API user the target accepts).
      [path.join('src', 'cli', 'replay.ts')]: ['user'],
      // The fallback paging of a client used without a profile (SPEC 6, API Platform's defaults).
      // Everything built from a profile passes profile.json successor.paging: startServer at
      // construction, every engine read per call (asserted in test/mapping.engine.test.ts).
      [path.join('src', 'successor', 'client.ts')]: ['page', 'itemsPerPage'],
    };
    const offenders: string[] = [];
    for (const file of sources) {
      const code = readFileSync(file, 'utf8');
      for (const name of names) {
        if (ownWords[file]?.includes(name)) continue;
        for (const quote of ["'", '"', '`']) {
          if (code.includes(`${quote}${name}${quote}`)) offenders.push(`${file}: ${quote}${name}${quote}`);
        }
      }
    }
    assert.ok(names.size > 30, `collected ${names.size} successor names`);
    assert.deepEqual(offenders, []);
  });
});

describe('a broken profile', () => {
  it('names the file and says why for JSON that does not parse', () => {
    const error = brokenProfile('fields/user.json', () => '{"table": "fields",');
    assert.equal(error.problems.length, 1);
    assert.equal(error.problems[0]?.file, path.join('fields', 'user.json'));
    assert.equal(error.problems[0]?.path, '$');
    assert.match(error.problems[0]?.message ?? '', /not valid JSON/);
    assert.match(error.message, /fields\/user\.json \$: not valid JSON/);
  });

  it('reads a file with a byte order mark; refuses a key given twice and nesting too deep, naming the file', () => {
    // The BOM was "not valid JSON at line 1, column 1"; the second key silently won over the
    // first; 5,000 levels stopped the check with "Maximum call stack size exceeded", no file named.
    const withBom = path.join(tempDir('mapping'), 'bom');
    cpSync(DEFAULT_PROFILE, withBom, { recursive: true });
    const profileFile = path.join(withBom, 'profile.json');
    writeFileSync(profileFile, `\uFEFF${readFileSync(profileFile, 'utf8')}`);
    assert.ok(loadProfile(withBom));
    const twice = brokenProfile(
      'fields/user.json',
      (json) => `${JSON.stringify(json).slice(0, -2)}, "status": {"attribute": "bogus"}}}`,
    );
    assert.deepEqual(
      twice.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        `${path.join('fields', 'user.json')} $: the key "status" appears twice in $.fields (JSON keeps only the last)`,
      ],
    );
    const deep = brokenProfile('operations/role.json', (json) => {
      (((json.operations as Record<string, Json>)['role.create'] as Json).steps as Json[])[0] = {
        method: 'POST',
        path: '/roles',
        body: 'DEEP',
      };
      // As text: JSON.stringify itself would overflow on it.
      return JSON.stringify(json).replace('"DEEP"', `${'{"x":'.repeat(5_000)}1${'}'.repeat(5_000)}`);
    });
    assert.deepEqual(
      deep.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [`${path.join('operations', 'role.json')} $: nested deeper than 100 levels`],
    );
  });

  it('follows linked files and folders of a profile; a link that leads nowhere is named', () => {
    // Linked files were passed over: "no value table named userStatus (known: none)".
    const real = path.join(tempDir('mapping'), 'real');
    cpSync(DEFAULT_PROFILE, real, { recursive: true });
    const linked = path.join(tempDir('mapping'), 'linked');
    mkdirSync(linked);
    for (const entry of readdirSync(real)) symlinkSync(path.join(real, entry), path.join(linked, entry));
    assert.equal(loadProfile(linked).operations.size, 41);
    // A version link beside its file, and a folder linked into itself: each read once.
    renameSync(path.join(real, 'operations', 'user.json'), path.join(real, 'operations', 'user.v3.json'));
    symlinkSync(path.join(real, 'operations', 'user.v3.json'), path.join(real, 'operations', 'user.json'));
    symlinkSync(real, path.join(real, 'loop'));
    assert.equal(loadProfile(linked).operations.size, 41);
    assert.equal(loadProfile(real).operations.size, 41);
    symlinkSync(path.join(real, 'nothing-there.json'), path.join(linked, 'dangling.json'));
    assert.throws(
      () => loadProfile(linked),
      (error: unknown) =>
        error instanceof MappingError &&
        error.problems.some(
          (p) => p.file === 'dangling.json' && /a link that leads nowhere: ENOENT/.test(p.message),
        ),
    );
  });

  it('refuses a table saved in another encoding (Windows-1252, UTF-16), naming the file and line', () => {
    // A Latin-1 `Ä` was read as U+FFFD and the profile called valid; UTF-16 was "not valid JSON at
    // line 1, column 1".
    const folder = path.join(tempDir('mapping'), 'encodings');
    cpSync(DEFAULT_PROFILE, folder, { recursive: true });
    const profileFile = path.join(folder, 'profile.json');
    const text = readFileSync(profileFile, 'utf8');
    writeFileSync(profileFile, Buffer.from(text.replace('"ROLE_ADMIN"', '"ROLE_\u00c4DMIN"'), 'latin1'));
    const statuses = path.join(folder, 'values', 'user-status.json');
    writeFileSync(
      statuses,
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(readFileSync(statuses, 'utf8'), 'utf16le')]),
    );
    assert.throws(
      () => loadProfile(folder),
      (error: unknown) => {
        assert.ok(error instanceof MappingError);
        const line = text.split('\n').findIndex((l) => l.includes('"ROLE_ADMIN"')) + 1;
        assert.deepEqual(
          error.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
          [
            `profile.json $: the file is not UTF-8 (line ${line} holds other bytes, e.g. Latin-1 or Windows-1252); save it as UTF-8`,
            `${path.join('values', 'user-status.json')} $: the file is UTF-16; save it as UTF-8`,
          ],
        );
        return true;
      },
    );
  });

  it("leaves an editor's hidden files alone: a lock link that leads nowhere, a backup copy, a .git folder", () => {
    // Read as tables, they failed the check (and every reload) while a file was open in Emacs:
    // "fields/.#user.json $: a link that leads nowhere", "kind user already has a field table".
    const folder = path.join(tempDir('mapping'), 'edited');
    cpSync(DEFAULT_PROFILE, folder, { recursive: true });
    symlinkSync('root@host.1234:1700000000', path.join(folder, 'fields', '.#user.json'));
    cpSync(path.join(folder, 'fields', 'user.json'), path.join(folder, 'fields', '.user.json'));
    mkdirSync(path.join(folder, '.git'));
    writeFileSync(path.join(folder, '.git', 'broken.json'), '{');
    assert.equal(loadProfile(folder).operations.size, 41);
  });

  it("refuses a value table or format that the legacy field's type cannot hold, read or written", () => {
    // Both passed every check: the proxy then answered status "x" and type true, and refused the
    // legacy "i" (the table's own 400) and "x" (the legacy schema's) alike.
    const statuses = brokenProfile(
      'values/user-status.json',
      (json) => {
        (json.entries as Json[])[2] = { legacy: 'x', successor: 'inactive' };
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      statuses.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        `${path.join('fields', 'user.json')} $.fields.status.values: value table userStatus gives "x", which the legacy field status does not have (it has "a", "r", "i"; GET /Core/Entity/User)`,
        `${path.join('fields', 'user.json')} $.fields.status.values: value table userStatus has no entry for "i" of the legacy field status: a write of it would be refused (POST /Core/Entity/User)`,
      ],
    );
    const format = brokenProfile(
      'fields/user.json',
      (json) => {
        ((json.fields as Json).type as Json).format = 'boolean';
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      format.problems.map((p) => [p.file, p.path]),
      [[path.join('fields', 'user.json'), '$.fields.type.format']],
    );
    assert.match(
      format.problems[0]?.message ?? '',
      /^gives a boolean, but the legacy field type is a string/,
    );
    // A fallback outside the enumeration is one too: it is what an unknown successor value gives.
    const fallback = brokenProfile(
      'values/user-status.json',
      (json) => ({ ...json, fallback: 'unknown' }),
      REQUIRED_OPERATIONS,
    );
    assert.match(
      fallback.problems[0]?.message ?? '',
      /gives "unknown", which the legacy field status does not have/,
    );
  });

  it('refuses a date format on a legacy string that is no date of that kind, and a legacy date without its format', () => {
    // Both passed every check: `format: "date"` on username answered null for every account and
    // refused every create with a 400 (the legacy client blamed); "date" on the date-time lastlogin
    // answered it without its time.
    const error = brokenProfile(
      'fields/user.json',
      (json) => {
        const fields = json.fields as Record<string, Json>;
        (fields.username as Json).format = 'date';
        (fields.lastlogin as Json).format = 'date';
        (fields.created as Json).format = 'date-time';
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    const file = path.join('fields', 'user.json');
    assert.deepEqual(
      error.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        `${file} $.fields.username.format: format "date" answers and takes only dates, but the legacy field username is a plain string: its values would be answered as null and written only as dates (a 400 for anything else); leave the format out or name "string" (POST /Sso/authenticate)`,
        `${file} $.fields.created.format: format "date-time" does not fit the legacy field created, which is a date: name format "date" (GET /Core/Entity/User)`,
        `${file} $.fields.lastlogin.format: format "date" does not fit the legacy field lastlogin, which is a date-time: name format "date-time" (GET /Core/Entity/User)`,
      ],
    );
    // The other way round: a legacy date answered without its format gave the successor's
    // date-time (`2024-08-01T07:00:00+00:00`) where the seed's `YYYY-MM-DD` is due.
    const plain = brokenProfile(
      'fields/user.json',
      (json) => {
        const fields = json.fields as Record<string, Json>;
        (fields.created as Json).format = 'string';
        delete (fields.lastlogin as Json).format;
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      plain.problems.map((p) => `${p.path}: ${p.message}`),
      [
        `$.fields.created.format: the legacy field created is a date (YYYY-MM-DD), but format "string" answers the successor's value as it comes (a date-time, a timestamp); name format "date" (GET /Core/Entity/User)`,
        `$.fields.lastlogin.format: the legacy field lastlogin is a date-time (ISO 8601 with seconds and a numeric offset), but no format answers the successor's value as it comes (a date-time, a timestamp); name format "date-time" (GET /Core/Entity/User)`,
      ],
    );
    // A reference or a value table on a legacy date answers an ID or a word; `format: "boolean"`
    // is the type check's one finding.
    const other = brokenProfile(
      'fields/user.json',
      (json) => {
        const fields = json.fields as Record<string, Json>;
        fields.deleted = { attribute: 'deletedBy', direction: 'read', ref: 'user' };
        fields.created = { attribute: 'created', direction: 'read', values: 'userStatus' };
        (fields.lastlogin as Json).format = 'boolean';
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      other.problems
        .filter((p) => /created|deleted|lastlogin/.test(p.path))
        .map((p) => `${p.path}: ${p.message}`),
      [
        `$.fields.deleted.format: the legacy field deleted is a date (YYYY-MM-DD), but a reference answers an ID; name format "date" (POST /Sso/authenticate)`,
        `$.fields.created.format: the legacy field created is a date (YYYY-MM-DD), but value table userStatus answers its own values; name format "date" (GET /Core/Entity/User)`,
        `$.fields.lastlogin.format: gives a boolean, but the legacy field lastlogin is a string (GET /Core/Entity/User)`,
      ],
    );
    // Written only: the body's half finds it too.
    const written = brokenProfile(
      'fields/user.json',
      (json) => {
        const fields = json.fields as Record<string, Json>;
        fields.auxInfo = { attribute: 'auxInfo', direction: 'write', format: 'date-time' };
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      written.problems.filter((p) => p.path === '$.fields.auxInfo.format').map((p) => p.message),
      [
        'format "date-time" answers and takes only date-times, but the legacy field auxInfo is a plain string: its values would be answered as null and written only as date-times (a 400 for anything else); leave the format out or name "string" (POST /Core/Entity/User)',
      ],
    );
  });

  it('refuses an enumerated legacy field mapped without a value table, read or written', () => {
    // It passed every check: the proxy then answered the successor's own status words, and sent a
    // legacy "i" as it came, for the successor to refuse.
    const error = brokenProfile(
      'fields/user.json',
      (json) => {
        delete ((json.fields as Json).status as Json).values;
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      error.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        `${path.join('fields', 'user.json')} $.fields.status: has no value table, but the legacy field status is one of "a", "r", "i": the successor's values would be answered as they are, and legacy values written as they are sent; name a value table that maps them in "values" (GET /Core/Entity/User)`,
      ],
    );
    // Written only (and a format that passes strings on): the write half alone.
    const written = brokenProfile(
      'fields/user.json',
      (json) => {
        const fields = json.fields as Record<string, Json>;
        fields.status = { attribute: 'status', direction: 'write', format: 'string' };
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      written.problems.filter((p) => p.path === '$.fields.status').map((p) => p.message),
      [
        'has no value table, but the legacy field status is one of "a", "r", "i": legacy values written as they are sent; name a value table that maps them in "values" (POST /Core/Entity/User)',
      ],
    );
  });

  it('refuses a body field a create requires that the field table does not write; an optional one may be read-only', () => {
    // Both passed every check, and then every create answered 400 "firstname cannot be written"
    // (or "name …"), blaming the legacy client for the profile.
    const user = brokenProfile(
      'fields/user.json',
      (json) => {
        const fields = json.fields as Record<string, Json>;
        (fields.firstname as Json).direction = 'read';
        fields.lastname = { attribute: 'lastname', direction: 'read', format: 'string' };
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    const file = path.join('fields', 'user.json');
    assert.deepEqual(
      user.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      ['firstname', 'lastname'].map(
        (name) =>
          `${file} $.fields.${name}.direction: ${name} is read-only, but POST /Core/Entity/User requires it in its legacy body (mapped as kind user in operations/user.json): every such call would answer 400 "${name} cannot be written"; make it "both"`,
      ),
    );
    const group = brokenProfile(
      'fields/group.json',
      (json) => {
        ((json.fields as Json).name as Json).direction = 'read';
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      group.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        `${path.join('fields', 'group.json')} $.fields.name.direction: name is read-only, but POST /Core/Entity/Group requires it in its legacy body (mapped as kind group in operations/group.json): every such call would answer 400 "name cannot be written"; make it "both"`,
      ],
    );
    // A field the table lacks altogether is named as well (after what reads it).
    const missing = brokenProfile(
      'fields/user.json',
      (json) => {
        delete (json.fields as Json).username;
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.match(
      missing.problems.at(-1)?.message ?? '',
      /^no writable field username, which POST \/Core\/Entity\/User requires in its legacy body \(mapped as kind user in operations\/user\.json\): every such call would answer 400 "username cannot be written"$/,
    );
    // Optional body fields (a create's type, every field of a PUT) may be read-only: sending one
    // is the documented 400 for that field.
    const dir = path.join(tempDir('mapping'), 'read-only-optional');
    cpSync(DEFAULT_PROFILE, dir, { recursive: true });
    const fieldsFile = path.join(dir, 'fields', 'user.json');
    const table = JSON.parse(readFileSync(fieldsFile, 'utf8')) as { fields: Record<string, Json> };
    for (const name of ['type', 'importId', 'auxInfo', 'status'])
      (table.fields[name] as Json).direction = 'read';
    writeFileSync(fieldsFile, JSON.stringify(table));
    assert.doesNotThrow(() => loadProfile(dir, REQUIRED_OPERATIONS));
  });

  it("refuses a default the legacy field cannot be: another type, the successor's value, no date", () => {
    // All passed every check, and an answer then said "type": 0, "lastlogin": "never", "roles": "none".
    const error = brokenProfile(
      'fields/user.json',
      (json) => {
        const fields = json.fields as Record<string, Json>;
        Object.assign(fields.type as Json, { default: 0 });
        Object.assign(fields.deleted as Json, { default: false });
        Object.assign(fields.lastlogin as Json, { default: 'never' });
        Object.assign(fields.roles as Json, { default: 'none' });
        Object.assign(fields.groups as Json, { default: null });
        Object.assign(fields.status as Json, { default: 'active' });
        Object.assign(fields.created as Json, { default: '2026-02-30' });
        Object.assign(fields.privileges as Json, { default: [1, null, { a: 2 }] });
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    const file = path.join('fields', 'user.json');
    assert.deepEqual(
      error.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        // SSO reads the user's deleted too (first of the operations that take it).
        `${file} $.fields.deleted.default: default false is a boolean, but the legacy field deleted is a string (POST /Sso/authenticate)`,
        `${file} $.fields.status.default: default "active" is not a value of the legacy field status (it has "a", "r", "i", and a default is answered as it stands; GET /Core/Entity/User)`,
        `${file} $.fields.created.default: default "2026-02-30" is not a date as format "date" answers one, e.g. "2026-01-01" (GET /Core/Entity/User)`,
        `${file} $.fields.lastlogin.default: default "never" is not a date-time as format "date-time" answers one, with seconds and a numeric offset, e.g. "2026-01-01T08:00:00+00:00" (GET /Core/Entity/User)`,
        `${file} $.fields.roles.default: default "none" is a string, but the legacy field roles is an array (GET /Core/Entity/User)`,
        `${file} $.fields.groups.default: default null, but the legacy field groups is never null (it is an array; GET /Core/Entity/User): give [] or leave the default out (null is what a field without one answers)`,
        // The legacy lists hold IDs: a default's elements are strings too.
        `${file} $.fields.privileges.default: default [1,null,{"a":2}] holds other values than non-empty strings, but the legacy field privileges lists IDs (GET /Core/Entity/User)`,
        `${file} $.fields.type.default: default 0 is a number, but the legacy field type is a string (POST /Core/Entity/User)`,
      ],
    );
    // An empty ID is no ID either.
    const emptyId = brokenProfile(
      'fields/user.json',
      (json) => {
        Object.assign((json.fields as Record<string, Json>).roles as Json, { default: [''] });
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      emptyId.problems.map((p) => p.message),
      [
        'default [""] holds other values than non-empty strings, but the legacy field roles lists IDs (GET /Core/Entity/User)',
      ],
    );
    // A date-time as another writer puts it (Z, no seconds) is not what the format answers.
    const zulu = brokenProfile(
      'fields/user.json',
      (json) => {
        Object.assign((json.fields as Json).lastlogin as Json, { default: '2026-01-01T08:00Z' });
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.equal(zulu.problems.length, 1);
    assert.equal(zulu.problems[0]?.path, '$.fields.lastlogin.default');
    // Legacy values of the legacy type pass, and null where the legacy field may be null.
    const dir = path.join(tempDir('mapping'), 'defaults');
    cpSync(DEFAULT_PROFILE, dir, { recursive: true });
    const fieldsFile = path.join(dir, 'fields', 'user.json');
    const table = JSON.parse(readFileSync(fieldsFile, 'utf8')) as { fields: Record<string, Json> };
    const defaults: Record<string, unknown> = {
      status: 'i',
      type: null,
      auxInfo: '',
      created: '1970-01-01',
      lastlogin: '1970-01-01T00:00:00+00:00',
      deleted: null,
      roles: [],
      admin: false,
    };
    for (const [name, value] of Object.entries(defaults)) (table.fields[name] as Json).default = value;
    writeFileSync(fieldsFile, JSON.stringify(table));
    assert.doesNotThrow(() => loadProfile(dir, REQUIRED_OPERATIONS));
  });

  it('names the JSON path of a value the schema refuses', () => {
    const error = brokenProfile('fields/user.json', (json) => {
      ((json.fields as Json).username as Json).direction = 'sideways';
      return json;
    });
    assert.deepEqual(
      error.problems.map((p) => [p.file, p.path]),
      [[path.join('fields', 'user.json'), '$.fields.username.direction']],
    );
  });

  it("refuses a locked field that is no boolean: SSO took anything but true for 'not locked'", () => {
    // Both passed every check; after a reload a locked user got an SSO token.
    const asText = brokenProfile(
      'fields/user.json',
      (json) => {
        ((json.fields as Json).locked as Json).format = 'string';
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      asText.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        `${path.join('fields', 'user.json')} $.fields.locked.format: gives a string, but the legacy field locked is a boolean (POST /Sso/authenticate)`,
      ],
    );
    const fromStatus = brokenProfile(
      'fields/user.json',
      (json) => {
        (json.fields as Json).locked = { attribute: 'status', direction: 'read', values: 'userStatus' };
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      fromStatus.problems.map((p) => `${p.path}: ${p.message}`),
      ['$.fields.locked: gives a string, but the legacy field locked is a boolean (POST /Sso/authenticate)'],
    );
  });

  it('finds references to value tables, kinds and settings that do not exist', () => {
    const values = brokenProfile('fields/user.json', (json) => {
      ((json.fields as Json).status as Json).values = 'noSuchTable';
      return json;
    });
    assert.equal(values.problems[0]?.path, '$.fields.status.values');
    assert.match(values.problems[0]?.message ?? '', /no value table named noSuchTable \(known: userStatus\)/);
    const kind = brokenProfile('fields/user.json', (json) => {
      ((json.fields as Json).groups as Json).ref = 'team';
      return json;
    });
    assert.match(kind.problems[0]?.message ?? '', /no entity kind team/);
    const setting = brokenProfile('fields/user.json', (json) => {
      (((json.fields as Json).admin as Json).contains as Json).value = '{settings.superRole}';
      return json;
    });
    assert.equal(setting.problems[0]?.path, '$.fields.admin.contains.value');
    assert.match(setting.problems[0]?.message ?? '', /no setting "superRole"/);
  });

  it('refuses two writable fields on one successor attribute, or one inside the other', () => {
    const same = brokenProfile('fields/user.json', (json) => {
      ((json.fields as Json).auxInfo as Json).attribute = 'importId';
      return json;
    });
    assert.deepEqual(
      same.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        `${path.join('fields', 'user.json')} $.fields.auxInfo.attribute: the writable fields importId and auxInfo both write the successor attribute importId: a body with both would keep only one value; give each its own attribute or make one "read"`,
      ],
    );
    const nested = brokenProfile('fields/user.json', (json) => {
      ((json.fields as Json).type as Json).attribute = 'importId.kind';
      return json;
    });
    assert.match(
      nested.problems[0]?.message ?? '',
      /the writable field importId writes importId, which holds importId\.kind that type writes/,
    );
    // A read-only field may read what a writable one writes (the shipped admin flag reads roles).
    const dir = path.join(tempDir('mapping'), 'ok');
    cpSync(DEFAULT_PROFILE, dir, { recursive: true });
    const file = path.join(dir, 'fields', 'user.json');
    const table = JSON.parse(readFileSync(file, 'utf8'));
    table.fields.auxInfo = { ...table.fields.auxInfo, attribute: 'importId', direction: 'read' };
    writeFileSync(file, JSON.stringify(table));
    assert.doesNotThrow(() => loadProfile(dir));
  });

  it('checks template variables of operation steps', () => {
    const error = brokenProfile('operations/user.json', (json) => {
      const ops = json.operations as Record<string, Json>;
      ((ops['user.restore'] as Json).steps as Json[])[0] = {
        method: 'POST',
        path: '/users/{entity.name}/restore',
      };
      ((ops['user.create'] as Json).steps as Json[])[0] = {
        method: 'POST',
        path: '/users/{item.uuid}',
        body: { nested: ['{fieldz}'] },
        returns: 'entity',
      };
      return json;
    });
    const problems = error.problems.map((p) => `${p.path}: ${p.message}`);
    assert.ok(
      problems.some((p) => p.startsWith('$.operations["user.restore"].steps[0].path: {entity.name}')),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) =>
        /\$\.operations\["user\.create"\]\.steps\[0\]\.path: \{item\.uuid\}: .*forEach/.test(p),
      ),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) =>
        p.startsWith('$.operations["user.create"].steps[0].body.nested[0]: {fieldz}: unknown variable'),
      ),
      problems.join('\n'),
    );
  });

  it('checks {params.…} and {body.…} against the path parameters and body fields of the served operation', () => {
    const error = brokenProfile(
      'operations/user.json',
      (json) => {
        const ops = json.operations as Record<string, Json>;
        ((ops['user.restore'] as Json).steps as Json[])[0] = {
          method: 'POST',
          path: '/users/{params.idd}/restore',
        };
        (((ops['user.password.set'] as Json).steps as Json[])[0] as Json).body = {
          password: '{body.passwrod}',
        };
        (((ops['user.link.groups.add'] as Json).steps as Json[])[0] as Json).describe = 'add {body.groups}';
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      error.problems.map((p) => `${p.path}: ${p.message}`),
      [
        '$.operations["user.link.groups.add"].steps[0].describe: {body.groups}: the legacy body of POST /Core/Entity/User/{id}/link/groups has no field "groups" (it has no fields)',
        '$.operations["user.restore"].steps[0].path: {params.idd}: the path of POST /Core/User/{id}/restore has no parameter "idd" (known: id)',
        '$.operations["user.password.set"].steps[0].body.password: {body.passwrod}: the legacy body of POST /Core/User/{id}/password has no field "passwrod" (known: password)',
      ],
    );
  });

  it('refuses a table of an operation the proxy does not serve, and a field no operation of its kind uses', () => {
    // Both loaded and did nothing: a misspelt operation id or legacy field name looked mapped.
    const operation = brokenProfile(
      'operations/user.json',
      (json) => {
        const ops = json.operations as Record<string, Json>;
        ops['user.gett'] = structuredClone(ops['user.get'] as Json);
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      operation.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        'operations/user.json $.operations["user.gett"]: the proxy serves no operation user.gett, so this table would never be used; closest: user.get, user.list, user.create',
      ],
    );
    const field = brokenProfile(
      'fields/user.json',
      (json) => {
        const fields = json.fields as Record<string, Json>;
        fields.email = { attribute: 'email', direction: 'both', format: 'string' };
        fields.firstName = { ...(fields.firstname as Json), direction: 'read' };
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      field.problems.map((p) => `${p.file} ${p.path}`),
      ['fields/user.json $.fields.email', 'fields/user.json $.fields.firstName'],
    );
    assert.match(
      field.problems[1]?.message ?? '',
      /^no legacy operation of kind user answers with or takes a field firstName, so this mapping would never be used; closest: firstname/,
    );
    // Without the served operations (a profile read for its ID tables), neither is checked.
    assert.ok(loadProfile(DEFAULT_PROFILE, []));
  });

  it('checks what each served operation answers with: the result type its handler takes, and a subject parameter its route has', () => {
    // A create or link mapped to "none" ran its writes and then answered 500, and a retry was
    // refused (the account was taken); a misspelt subject parameter answered every call 500.
    const error = brokenProfile(
      'operations/user.json',
      (json) => {
        const ops = json.operations as Record<string, Json>;
        (ops['user.create'] as Json).result = { type: 'none' };
        (ops['user.link.groups.add'] as Json).result = { type: 'none' };
        (ops['user.delete'] as Json).result = { type: 'entity' };
        ((ops['user.get'] as Json).subject as Json).param = 'idd';
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      error.problems.map((p) => `${p.file} ${p.path}: ${p.message}`),
      [
        'operations/user.json $.operations["user.create"].result.type: POST /Core/Entity/User needs a result of type "entity", not "none"',
        'operations/user.json $.operations["user.get"].subject.param: GET /Core/Entity/User/{id} has no path parameter idd (known: id)',
        'operations/user.json $.operations["user.delete"].result.type: DELETE /Core/Entity/User/{id} needs a result of type "none", not "entity"',
        'operations/user.json $.operations["user.link.groups.add"].result.type: POST /Core/Entity/User/{id}/link/groups needs a result of type "entity", not "none"',
      ],
    );
  });

  it('refuses a field table without a field the served operations answer with, once per field, naming them', () => {
    // Every call of those operations answered 500 "no readable field"; SSO without `locked` too.
    const error = brokenProfile(
      'fields/user.json',
      (json) => {
        const fields = json.fields as Record<string, Json>;
        delete fields.locked;
        (fields.auxInfo as Json).direction = 'write';
        return json;
      },
      REQUIRED_OPERATIONS,
    );
    const messages = error.problems.map((p) => `${p.file} ${p.path}: ${p.message}`);
    assert.deepEqual(messages, [
      'fields/user.json $.fields: no readable field locked, which POST /Sso/authenticate needs (mapped as kind user in operations/sso.json)',
      'fields/user.json $.fields: no readable field auxInfo, which POST /Core/Entity/User, GET /Core/Entity/User/{id}, PUT /Core/Entity/User/{id}, POST /Core/Entity/User/{id}/link/groups, DELETE /Core/Entity/User/{id}/link/groups, POST /Core/Entity/User/{id}/link/roles, DELETE /Core/Entity/User/{id}/link/roles, POST /Core/Entity/User/{id}/link/privileges, DELETE /Core/Entity/User/{id}/link/privileges need (mapped as kind user in operations/user.json)',
    ]);
  });

  it('refuses a sequence prefix whose IDs no legacy path could name', () => {
    // "G/1" was assigned (201) and stored for good, and every address of it answered 404.
    for (const [prefix, reason] of [
      ['G/', /it could not stand in a path/],
      ['G\\', /it could not stand in a path/],
      ['G\t', /control characters/],
      ['G'.repeat(250), /at most 255 bytes/],
    ] as const) {
      const error = brokenProfile('ids.json', (json) => {
        (json.kinds as Record<string, Json>).group = {
          strategy: 'table',
          assign: { rule: 'sequence', prefix, start: 1 },
        };
        return json;
      });
      assert.equal(error.problems.length, 1, JSON.stringify(error.problems));
      assert.equal(error.problems[0]?.path, '$.kinds.group.assign.prefix');
      assert.match(error.problems[0]?.message ?? '', reason);
      assert.match(error.problems[0]?.message ?? '', /^the IDs it makes /);
    }
    const fine = path.join(tempDir('mapping'), 'fine');
    cpSync(DEFAULT_PROFILE, fine, { recursive: true });
    const ids = JSON.parse(readFileSync(path.join(fine, 'ids.json'), 'utf8')) as Json;
    (ids.kinds as Record<string, Json>).group = {
      strategy: 'table',
      assign: { rule: 'sequence', prefix: 'GRP-', start: 1 },
    };
    writeFileSync(path.join(fine, 'ids.json'), JSON.stringify(ids));
    assert.ok(loadProfile(fine));
  });

  it('refuses a step path the successor client would refuse or misread: another origin, a fragment, dot segments', () => {
    // All passed mappings check; at run time the calls were refused (502) or lost their fragment.
    const paths = [
      'http://evil.example/roles',
      '//evil.example/roles',
      '/roles#top',
      '/roles?x=1#f',
      '/../../roles',
      '/roles/./x',
    ];
    const error = brokenProfile('operations/role.json', (json) => {
      const ops = json.operations as Record<string, Json>;
      paths.forEach((stepPath, index) => {
        ops[`role.extra${index}`] = {
          kind: 'role',
          steps: [{ method: 'GET', path: stepPath, collection: true }],
          result: { type: 'collection' },
        };
      });
      return json;
    });
    assert.deepEqual(
      error.problems.map((p) => `${p.path}: ${p.message}`),
      [
        '$.operations["role.extra0"].steps[0].path: a path below successor.baseUrl, without scheme or host (calls to another origin are refused)',
        '$.operations["role.extra1"].steps[0].path: a path below successor.baseUrl, without scheme or host (calls to another origin are refused)',
        '$.operations["role.extra2"].steps[0].path: no fragment in a path: it is never sent',
        '$.operations["role.extra3"].steps[0].path: no fragment in a path: it is never sent',
        '$.operations["role.extra4"].steps[0].path: no "." or ".." segments in a path',
        '$.operations["role.extra5"].steps[0].path: no "." or ".." segments in a path',
      ],
    );
  });

  it('checks {fields.…} against the attributes the writable fields of the kind write', () => {
    // A misspelt one passed every check (and --live): the role was created without its
    // privileges, and the step's condition silently never held.
    const error = brokenProfile('operations/role.json', (json) => {
      const ops = json.operations as Record<string, Json>;
      const steps = (ops['role.create'] as Json).steps as Json[];
      (steps[1] as Json).when = '{fields.privilegs}';
      ((steps[0] as Json).body as Json).name = '{fields.nmae}';
      return json;
    });
    assert.deepEqual(
      error.problems.map((p) => `${p.path}: ${p.message}`),
      [
        '$.operations["role.create"].steps[0].body.name: {fields.nmae}: no writable field of kind role writes the attribute "nmae" (known: name, module, privileges)',
        '$.operations["role.create"].steps[1].when: {fields.privilegs}: no writable field of kind role writes the attribute "privilegs" (known: name, module, privileges)',
      ],
    );
  });

  it('checks SSO steps against what its handler hands them: the username as a parameter, no body', () => {
    const withStep = (step: Json) => (json: Json) => {
      ((json.operations as Record<string, Json>)['sso.authenticate'] as Json).steps = [step];
      return json;
    };
    const dir = path.join(tempDir('mapping'), 'sso');
    cpSync(DEFAULT_PROFILE, dir, { recursive: true });
    const file = path.join(dir, 'operations', 'sso.json');
    const json = JSON.parse(readFileSync(file, 'utf8')) as Json;
    writeFileSync(
      file,
      JSON.stringify(withStep({ method: 'GET', path: '/users?user={params.username}' })(json)),
    );
    assert.doesNotThrow(() => loadProfile(dir, REQUIRED_OPERATIONS), 'the username is a parameter');
    const error = brokenProfile(
      'operations/sso.json',
      withStep({ method: 'GET', path: '/users?user={body.username}' }),
      REQUIRED_OPERATIONS,
    );
    assert.deepEqual(
      error.problems.map((p) => `${p.path}: ${p.message}`),
      [
        '$.operations["sso.authenticate"].steps[0].path: {body.username}: the legacy body of POST /Sso/authenticate has no field "username" (it has no fields)',
      ],
    );
  });

  it('refuses a value table that would not read back what it writes', () => {
    const error = brokenProfile('values/user-status.json', (json) => {
      (json.entries as Json[]).push({ legacy: 'x', successor: 'active' });
      return json;
    });
    assert.equal(error.problems[0]?.path, '$.entries[3].successor');
    assert.match(error.problems[0]?.message ?? '', /listed twice/);
  });

  it('needs a profile file and an ID strategy for every kind', () => {
    const missing = brokenProfile('profile.json', () => undefined);
    assert.match(missing.message, /no file with "table": "profile"/);
    const noIds = brokenProfile('ids.json', (json) => {
      delete (json.kinds as Json).role;
      return json;
    });
    assert.equal(noIds.problems[0]?.file, 'entities.json');
    assert.equal(noIds.problems[0]?.path, '$.kinds.role');
    assert.match(noIds.problems[0]?.message ?? '', /no ID strategy/);
  });

  it('lists every problem at once, across files', () => {
    const dir = path.join(tempDir('mapping'), 'many');
    cpSync(DEFAULT_PROFILE, dir, { recursive: true });
    writeFileSync(path.join(dir, 'values', 'user-status.json'), '{"table": "values"}');
    writeFileSync(path.join(dir, 'extra.json'), '{"table": "nonsense"}');
    assert.throws(
      () => loadProfile(dir),
      (error: unknown) => {
        assert.ok(error instanceof MappingError);
        const files = new Set(error.problems.map((p) => p.file));
        assert.deepEqual([...files].sort(), ['extra.json', path.join('values', 'user-status.json')]);
        return true;
      },
    );
  });
});

describe('templates, formats and value tables', () => {
  const anyVariable = () => undefined;

  it('renders whole placeholders raw and others as text; stray braces are errors', () => {
    const lookup = (p: readonly string[]) => (p[0] === 'items' ? ['a', 'b'] : p.join('.'));
    assert.deepEqual(renderTemplate(compileTemplate('{items.iri}', anyVariable), lookup), ['a', 'b']);
    assert.equal(renderText(compileTemplate('/x/{entity.uuid}/y', anyVariable), lookup), '/x/entity.uuid/y');
    assert.equal(
      renderText(compileTemplate('/u/{params.id}', anyVariable), () => 'a/b c', encodeURIComponent),
      '/u/a%2Fb%20c',
    );
    assert.throws(() => compileTemplate('/x/{entity.uuid', anyVariable), TemplateError);
    assert.throws(() => compileTemplate('/x/{ bad }', anyVariable), TemplateError);
    assert.throws(
      () => compileTemplate('{nope}', (p) => (p[0] === 'nope' ? 'unknown' : undefined)),
      /\{nope\}: unknown/,
    );
  });

  it('formats dates as YYYY-MM-DD and date-times as ISO 8601 with a numeric offset', () => {
    assert.equal(toLegacyDate('2026-03-04T23:30:00+01:00'), '2026-03-04', 'the date where it was written');
    assert.equal(toLegacyDate(null), null);
    assert.equal(toLegacyDateTime('2026-03-04T23:30:00Z'), '2026-03-04T23:30:00+00:00');
    assert.equal(toLegacyDateTime('2026-03-04T23:30:00.123+0100'), '2026-03-04T23:30:00+01:00');
    assert.equal(toLegacyDateTime('2026-03-04 23:30'), '2026-03-04T23:30:00+00:00');
    assert.equal(toLegacyDateTime(undefined), null);
    assert.equal(toLegacyDateTime(1_700_000_000), '2023-11-14T22:13:20+00:00', 'a Unix timestamp in seconds');
    assert.equal(toLegacyDate(1_700_000_000_000), '2023-11-14', 'a Unix timestamp in milliseconds');
    // PostgreSQL's text form of a timestamptz: an offset of whole hours has no minutes.
    assert.equal(toLegacyDateTime('2024-12-25 10:00:00+01'), '2024-12-25T10:00:00+01:00');
    assert.equal(toLegacyDate('2024-12-25 10:00:00+01'), '2024-12-25');
  });

  it('finds no date in another format, an impossible date or a timestamp out of range (undefined)', () => {
    for (const value of [
      '25.12.2024',
      '2024-01-01 08:00:00 CET',
      '2024-02-30',
      '2024-01-01T24:00',
      'soon',
      true,
    ]) {
      assert.equal(toLegacyDate(value), undefined, JSON.stringify(value));
      assert.equal(toLegacyDateTime(value), undefined, JSON.stringify(value));
    }
    for (const value of [1e20, 9e15, -1e17, Number.NaN]) {
      assert.equal(toLegacyDate(value), undefined, String(value));
      assert.equal(toLegacyDateTime(value), undefined, String(value));
    }
  });

  it('knows the calendar: leap years, month lengths, no month 0 or 13, no day 0', () => {
    for (const day of ['2024-02-29', '2000-02-29', '1600-02-29', '2023-12-31', '0001-01-01', '9999-12-31'])
      assert.equal(toLegacyDate(day), day);
    for (const day of [
      '2023-02-29',
      '1900-02-29',
      '2100-02-29',
      '2024-04-31',
      '2024-00-10',
      '2024-13-01',
      '2024-01-00',
    ])
      assert.equal(toLegacyDate(day), undefined, day);
    // Every day of four years around a century leap rule, as JavaScript's own calendar has it.
    for (let t = Date.UTC(1899, 0, 1); t < Date.UTC(1901, 0, 1); t += 86_400_000) {
      const day = new Date(t).toISOString().slice(0, 10);
      assert.equal(toLegacyDate(day), day);
    }
    for (let t = Date.UTC(1999, 0, 1); t < Date.UTC(2001, 0, 1); t += 86_400_000) {
      const day = new Date(t).toISOString().slice(0, 10);
      assert.equal(toLegacyDate(day), day);
    }
  });

  it('reads back every legacy value it writes, and unknown successor values become the fallback', () => {
    for (const dir of [DEFAULT_PROFILE, ALT_PROFILE]) {
      const profile = loadProfile(dir);
      const status = profile.resources.get('user')?.fields.get('status');
      assert.ok(status?.values);
      for (const legacy of ['a', 'r', 'i']) {
        assert.equal(
          readThroughValues(status.values, writeValue(status, legacy)),
          legacy,
          `${dir} ${legacy}`,
        );
      }
      assert.throws(() => writeValue(status, 'x'), /must be one of "a", "r", "i"/);
    }
    const alt = loadProfile(ALT_PROFILE).resources.get('user')?.fields.get('status')?.values;
    assert.ok(alt);
    assert.equal(readThroughValues(alt, 'suspended'), 'i');
  });
});
