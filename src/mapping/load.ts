import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { JsonFileError, parseJsonFile } from '../lib/json-syntax.js';
import { utf8Text } from '../lib/utf8-text.js';
import {
  type CompiledProfile,
  compileProfile,
  type ProfileSources,
  type RequiredOperation,
  type SourceFile,
} from './compile.js';
import { jsonPath, MappingError, type MappingProblem } from './errors.js';
import { type MappingFile, mappingFileSchema } from './schema.js';

/**
 * Reads every `*.json` file below a profile folder, validates each with zod and the whole
 * profile with its cross-references, and precompiles it. Throws a MappingError that lists every
 * problem with file, JSON path and reason. `served`: the operations the proxy serves, whose path
 * parameters and body fields the templates' `{params.…}` and `{body.…}` must name.
 */
export function loadProfile(folder: string, served: readonly RequiredOperation[] = []): CompiledProfile {
  const problems: MappingProblem[] = [];
  const files = listJsonFiles(folder, problems);
  const parsed: SourceFile<MappingFile>[] = [];
  for (const file of files) {
    const relative = path.relative(folder, file) || path.basename(file);
    let raw: unknown;
    try {
      // A table saved in another encoding (Windows-1252, UTF-16) is refused, not read with U+FFFD
      // in place of every `ü` of a role or value name.
      const read = utf8Text(readFileSync(file));
      if ('problem' in read) {
        problems.push({ file: relative, path: '$', message: `the file ${read.problem}` });
        continue;
      }
      raw = parseJsonFile(read.text);
    } catch (error) {
      problems.push({
        file: relative,
        path: '$',
        message: error instanceof JsonFileError ? error.message : `cannot read: ${errorCode(error)}`,
      });
      continue;
    }
    const result = mappingFileSchema.safeParse(raw);
    if (!result.success) {
      for (const issue of result.error.issues) {
        problems.push({
          file: relative,
          path: jsonPath(issue.path.filter((p): p is string | number => typeof p !== 'symbol')),
          message: issue.message,
        });
      }
      continue;
    }
    parsed.push({ file: relative, data: result.data });
  }
  const sources = groupFiles(parsed, problems);
  if (problems.length > 0 || !sources) throw new MappingError(folder, problems);
  const compiled = compileProfile(folder, sources, served);
  if ('problems' in compiled) throw new MappingError(folder, compiled.problems);
  return compiled.profile;
}

function listJsonFiles(folder: string, problems: MappingProblem[]): string[] {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(folder);
  } catch (error) {
    problems.push({
      file: folder,
      path: '$',
      message: `cannot read the profile folder: ${errorCode(error)}`,
    });
    return [];
  }
  if (!stat.isDirectory()) {
    problems.push({ file: folder, path: '$', message: 'not a folder' });
    return [];
  }
  const out: string[] = [];
  // Links are followed (a profile under /etc is often linked together), each folder and file read once.
  const seen = new Set<string>();
  const walk = (dir: string) => {
    const real = realpathSync(dir);
    if (seen.has(real)) return;
    seen.add(real);
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      // Hidden entries are an editor's or a tool's, not tables: Emacs' lock link `.#user.json`
      // (which leads nowhere), a backup `.user.json`, a `.git` folder. Read, they failed every
      // check and reload while a file was open in an editor.
      if (entry.name.startsWith('.')) continue;
      const full = path.join(dir, entry.name);
      let isFolder = entry.isDirectory();
      let isFile = entry.isFile();
      if (entry.isSymbolicLink()) {
        try {
          const target = statSync(full);
          isFolder = target.isDirectory();
          isFile = target.isFile();
        } catch (error) {
          problems.push({
            file: path.relative(folder, full),
            path: '$',
            message: `a link that leads nowhere: ${errorCode(error)}`,
          });
          continue;
        }
      }
      if (isFolder) walk(full);
      else if (isFile && entry.name.endsWith('.json') && !entry.name.endsWith('.schema.json')) {
        // A file reached twice (a link to a file of the profile, a version link) is read once.
        const real = realpathSync(full);
        if (seen.has(real)) continue;
        seen.add(real);
        out.push(full);
      }
    }
  };
  walk(folder);
  return out;
}

function groupFiles(
  files: SourceFile<MappingFile>[],
  problems: MappingProblem[],
): ProfileSources | undefined {
  const profiles: SourceFile<Extract<MappingFile, { table: 'profile' }>>[] = [];
  const sources: Omit<ProfileSources, 'profile'> = {
    entities: [],
    ids: [],
    values: [],
    fields: [],
    operations: [],
  };
  for (const { file, data } of files) {
    switch (data.table) {
      case 'profile':
        profiles.push({ file, data });
        break;
      case 'entities':
        sources.entities.push({ file, data });
        break;
      case 'ids':
        sources.ids.push({ file, data });
        break;
      case 'values':
        sources.values.push({ file, data });
        break;
      case 'fields':
        sources.fields.push({ file, data });
        break;
      case 'operations':
        sources.operations.push({ file, data });
        break;
    }
  }
  const [profile, ...extra] = profiles;
  for (const other of extra) {
    problems.push({
      file: other.file,
      path: '$.table',
      message: `a profile has one profile file; ${profile?.file} is one already`,
    });
  }
  if (!profile) {
    if (problems.length === 0)
      problems.push({
        file: '(profile)',
        path: '$',
        message: 'no file with "table": "profile" (profile.json)',
      });
    return undefined;
  }
  return { profile, ...sources };
}

function errorCode(error: unknown): string {
  return (
    (error as NodeJS.ErrnoException | undefined)?.code ?? (error instanceof Error ? error.message : 'error')
  );
}
