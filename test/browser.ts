// Headless Chromium for the browser tests, with nothing installed by hand: a system Chromium when
// there is one (CHROMIUM_PATH, /usr/bin/chromium), otherwise the binary that ships inside the
// @sparticuz/chromium npm package, inflated once into a shared cache directory.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Chromium from '@sparticuz/chromium';
import { type Browser, chromium } from 'playwright-core';

const SYSTEM_CHROMIUM = '/usr/bin/chromium';

/** Flags for a headless browser run as root on a closed network, with no background traffic. */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

interface Executable {
  path: string;
  env: Record<string, string>;
}

async function packageVersion(): Promise<string> {
  // The package exports only its entry point (build/index.js), not package.json.
  const url = new URL('../package.json', import.meta.resolve('@sparticuz/chromium'));
  const { version } = JSON.parse(await readFile(url, 'utf8')) as { version: string };
  return version;
}

/**
 * A fontconfig setup with the packaged fonts besides the system's. The package's own fonts.conf
 * points at serverless paths; a renderer that finds no font at all aborts.
 */
function fontConfig(target: string): string {
  return `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <dir>${join(target, 'fonts', 'fonts')}</dir>
  <cachedir>${join(target, 'fontconfig', 'cache')}</cachedir>
</fontconfig>
`;
}

/** The packaged Chromium, inflated into `<tmpdir>/idm-compat-chromium-<version>` on first use. */
async function packagedChromium(): Promise<Executable> {
  const root = tmpdir();
  const target = join(root, `idm-compat-chromium-${await packageVersion()}`);
  const binary = join(target, 'chromium');
  const env = { FONTCONFIG_PATH: join(target, 'fontconfig') };
  if (existsSync(binary)) return { path: binary, env };

  await mkdir(root, { recursive: true });
  const staging = await mkdtemp(join(root, 'idm-compat-chromium-staging-'));
  // The package inflates into os.tmpdir() and takes a binary already there as finished, so
  // concurrent test processes could launch a half-written file. It reads TMPDIR synchronously
  // when executablePath() starts, so a private staging directory is set for exactly that call
  // and then renamed into place in one step.
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = staging;
  let inflating: Promise<string>;
  try {
    inflating = Chromium.executablePath();
  } finally {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
  }
  try {
    await inflating;
    await mkdir(join(staging, 'fontconfig'));
    await writeFile(join(staging, 'fontconfig', 'fonts.conf'), fontConfig(target));
    await rename(staging, target);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    // Another process finished first: its copy is complete.
    if (!existsSync(binary)) throw error;
  }
  return { path: binary, env };
}

async function findChromium(): Promise<Executable> {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH=${configured} does not exist`);
    return { path: configured, env: {} };
  }
  if (existsSync(SYSTEM_CHROMIUM)) return { path: SYSTEM_CHROMIUM, env: {} };
  return packagedChromium();
}

/**
 * Launches headless Chromium (system or packaged). Playwright gives every launch a fresh
 * --user-data-dir of its own and removes it on close().
 */
export async function launchBrowser(): Promise<Browser> {
  const executable = await findChromium();
  return chromium.launch({
    executablePath: executable.path,
    args: FLAGS,
    env: { ...process.env, ...executable.env },
  });
}
