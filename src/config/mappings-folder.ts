import { readdirSync, type Stats, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { realPath, statIfThere } from '../lib/real-path.js';
import { type AppConfig, ConfigError } from './load.js';

/** The mapping profiles shipped with idm-compat (the package's own `mappings/`). */
export const SHIPPED_MAPPINGS_DIR = fileURLToPath(new URL('../../mappings', import.meta.url));

/** How a refusal names the files of {@link SHIPPED_MAPPINGS_DIR}. */
export const SHIPPED_FILES = `in the folder idm-compat ships its mapping profiles and compare rules in (${SHIPPED_MAPPINGS_DIR})`;

/**
 * Whether `file` (links resolved, also for a file not there yet) lies in the shipped `mappings/`
 * folder, or is one of its files under another name (a hard link): an output written there (a
 * recording, a report, an export) overwrites the shipped profile or compare rules, or adds a table
 * to a profile, and every later start or compare fails on it.
 */
export function inShippedMappings(file: string): boolean {
  if (realPath(file).startsWith(`${realPath(SHIPPED_MAPPINGS_DIR)}${path.sep}`)) return true;
  const stat = statIfThere(file);
  if (stat === undefined || !stat.isFile() || stat.nlink < 2) return false;
  return shippedFiles().some((shipped) => shipped.dev === stat.dev && shipped.ino === stat.ino);
}

/** Device and inode of every file in the shipped `mappings/` folder. */
function shippedFiles(): Stats[] {
  return readdirSync(SHIPPED_MAPPINGS_DIR, { recursive: true, encoding: 'utf8' }).flatMap((name) => {
    const stat = statIfThere(path.join(SHIPPED_MAPPINGS_DIR, name));
    return stat?.isFile() ? [stat] : [];
  });
}

/**
 * The folder of the configured mapping profile, or a {@link ConfigError} naming the key when there
 * is no such folder. A `mappings.dir` that is set is relative to the working directory; one that
 * is not there says where relative paths start and where the shipped profiles are. Without
 * `mappings.dir`, `./mappings/<profile>` in the working directory when there is one (the default of
 * earlier versions: a deployment's own or edited copy keeps being used), else the profile shipped
 * with idm-compat, wherever it was installed: the embedded defaults of sandbox mode (no file to
 * set the key in) then work in any folder, not only in a checkout.
 */
export function mappingsFolder(config: Pick<AppConfig, 'mappings' | 'source'>): string {
  const { profile } = config.mappings;
  const problem = (key: string, message: string) =>
    new ConfigError(config.source ?? '(embedded defaults)', [{ path: key, message }]);
  if (config.mappings.dir === undefined) {
    const candidates = [path.resolve('mappings'), SHIPPED_MAPPINGS_DIR].map((dir) =>
      path.resolve(dir, profile),
    );
    const found = candidates.find(isFolder);
    if (found !== undefined) return found;
    throw problem(
      'mappings.profile',
      `there is no profile folder ${profile} in ./mappings (${path.resolve('mappings')}) nor among the profiles shipped with idm-compat (${SHIPPED_MAPPINGS_DIR}); set mappings.dir to the folder that holds it`,
    );
  }
  const dir = path.resolve(config.mappings.dir);
  if (!isFolder(dir)) {
    throw problem(
      'mappings.dir',
      `the folder ${dir} does not exist (relative paths start at the working directory, ${process.cwd()}; ` +
        `the profiles shipped with idm-compat are in ${SHIPPED_MAPPINGS_DIR})`,
    );
  }
  const folder = path.resolve(dir, profile);
  if (!isFolder(folder)) throw problem('mappings.profile', `there is no profile folder ${profile} in ${dir}`);
  return folder;
}

function isFolder(at: string): boolean {
  try {
    return statSync(at).isDirectory();
  } catch {
    return false;
  }
}
