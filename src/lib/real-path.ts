import { lstatSync, readlinkSync, realpathSync, type Stats, statSync } from 'node:fs';
import path from 'node:path';

/**
 * `at` with its symbolic links resolved; for a file not there (yet), its folder's, and the target
 * of a link that points at nothing yet (a link to the store a first start will create).
 */
export function realPath(at: string, hops = 0): string {
  try {
    return realpathSync(at);
  } catch {
    const absolute = path.resolve(at);
    try {
      if (hops < 40 && lstatSync(absolute).isSymbolicLink())
        return realPath(path.resolve(path.dirname(absolute), readlinkSync(absolute)), hops + 1);
    } catch {
      // not there at all: its folder's real path below
    }
    try {
      return path.join(realpathSync(path.dirname(absolute)), path.basename(absolute));
    } catch {
      return absolute;
    }
  }
}

/** `statSync` of `at` (links followed), or undefined when there is nothing there to stat. */
export function statIfThere(at: string): Stats | undefined {
  try {
    return statSync(at);
  } catch {
    return undefined;
  }
}
