import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AppConfig, ConfigError } from './load.js';

/** The mapping profiles shipped with idm-compat (the package's own `mappings/`). */
export const SHIPPED_MAPPINGS_DIR = fileURLToPath(new URL('../../mappings', import.meta.url));

/**
 * The folder of the configured mapping profile (`mappings.dir`/`mappings.profile`, relative to the
 * working directory), or a {@link ConfigError} naming the key when there is no such folder. Started
 * outside the checkout (`npx idm-compat serve` in another folder), the default `./mappings` is not
 * there: the message says where the shipped profiles are, instead of the profile loader's ENOENT.
 */
export function mappingsFolder(config: Pick<AppConfig, 'mappings' | 'source'>): string {
  const dir = path.resolve(config.mappings.dir);
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
