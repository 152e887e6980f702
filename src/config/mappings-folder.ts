import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AppConfig, ConfigError } from './load.js';

/** The mapping profiles shipped with idm-compat (the package's own `mappings/`). */
export const SHIPPED_MAPPINGS_DIR = fileURLToPath(new URL('../../mappings', import.meta.url));

/**
 * The folder of the configured mapping profile (`mappings.dir`/`mappings.profile`, relative to the
 * working directory), or a {@link ConfigError} naming the key when there is no such folder. Without
 * `mappings.dir` the profiles shipped with idm-compat are meant, wherever it was installed and
 * whatever the working directory: the embedded defaults of sandbox mode (no file to set it in)
 * work in any folder, not only in a checkout. A `mappings.dir` that is not there says where
 * relative paths start and where the shipped profiles are, instead of the profile loader's ENOENT.
 */
export function mappingsFolder(config: Pick<AppConfig, 'mappings' | 'source'>): string {
  const dir = config.mappings.dir === undefined ? SHIPPED_MAPPINGS_DIR : path.resolve(config.mappings.dir);
  const folder = path.resolve(dir, config.mappings.profile);
  const problem = (key: string, message: string) =>
    new ConfigError(config.source ?? '(embedded defaults)', [{ path: key, message }]);
  if (!isFolder(dir)) {
    throw problem(
      'mappings.dir',
      `the folder ${dir} does not exist (relative paths start at the working directory, ${process.cwd()}; ` +
        `the profiles shipped with idm-compat are in ${SHIPPED_MAPPINGS_DIR})`,
    );
  }
  if (!isFolder(folder)) {
    throw problem('mappings.profile', `there is no profile folder ${config.mappings.profile} in ${dir}`);
  }
  return folder;
}

function isFolder(at: string): boolean {
  try {
    return statSync(at).isDirectory();
  } catch {
    return false;
  }
}

/**
 * A profile folder `./mappings/<profile>` in the working directory that is not used because
 * `mappings.dir` is unset (the shipped profiles are meant): an edited copy there, which the
 * default `./mappings` of earlier versions used, would otherwise be passed over in silence.
 * Undefined when there is none, or when it is the shipped folder (a checkout).
 */
export function unusedLocalProfile(config: Pick<AppConfig, 'mappings'>): string | undefined {
  if (config.mappings.dir !== undefined) return undefined;
  const local = path.resolve('mappings');
  if (local === path.resolve(SHIPPED_MAPPINGS_DIR)) return undefined;
  const folder = path.join(local, config.mappings.profile);
  return isFolder(folder) ? folder : undefined;
}
