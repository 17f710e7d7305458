import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { run } from './exec.js';
import { freePort } from './ports.js';
import { ServerProcess } from './processes-group.js';

const START_TIMEOUT_MS = 60_000;
/** PostgreSQL refuses to run as root; as root the server runs as Debian's `postgres` user. */
const SERVER_USER = 'postgres';
const SUPERUSER = 'postgres';

/**
 * A PostgreSQL binary: Debian keeps them under /usr/lib/postgresql/VERSION/bin (the newest version installed wins),
 * other systems on the PATH's usual directories.
 */
export function findPostgresBinary(name: string): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const dirs = [...versions.map((v) => join(root, v, 'bin')), '/usr/local/bin', '/usr/bin', '/usr/sbin'];
  for (const dir of dirs) {
    if (existsSync(join(dir, name))) return join(dir, name);
  }
  throw new Error(`${name} not found; run scripts/test-deps.sh (installs postgresql from Debian's packages)`);
}

/** The uid/gid to run the server as when the tests run as root (PostgreSQL will not). */
async function serverIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number((await run('id', ['-u', SERVER_USER])).stdout.trim());
    const gid = Number((await run('id', ['-g', SERVER_USER])).stdout.trim());
    return { uid, gid };
  } catch (e) {
    throw new Error(
      `running as root, and PostgreSQL will not: no user ${SERVER_USER} to run it as (Debian's postgresql package ` +
        `creates it; or set SCALE_AGENT_TEST_POSTGRES_URL to an existing server)`,
      { cause: e },
    );
  }
}

/** `cmd args` as the server user when running as root (setpriv execs, so the pid stays the server's). */
function asServerUser(ids: { uid: number; gid: number } | undefined, cmd: string, args: string[]): [string, string[]] {
  if (!ids) return [cmd, args];
  return ['setpriv', [`--reuid=${ids.uid}`, `--regid=${ids.gid}`, '--clear-groups', cmd, ...args]];
}

/**
 * A throwaway PostgreSQL server (Debian's postgresql) on a temp data dir and a free loopback port: trust
 * authentication for TCP from 127.0.0.1 only, no Unix socket, durability off (fsync, synchronous commit and full-page
 * writes: a test server may lose its last commits when killed).
 */
export class PostgresServer {
  proc!: ServerProcess;

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly ids: { uid: number; gid: number } | undefined,
    private readonly durable: boolean,
  ) {}

  /** The superuser over TCP without a password, on the maintenance database; test databases are created per file. */
  get url(): string {
    return `postgres://${SUPERUSER}@127.0.0.1:${this.port}/postgres`;
  }

  get pid(): number {
    return this.proc.pid;
  }

  get logFile(): string {
    return join(this.dir, 'postgres.log');
  }

  get datadir(): string {
    return join(this.dir, 'data');
  }

  /**
   * `durable`: commits are flushed as a production server flushes them (the fault rig, where a SIGKILLed server
   * must not lose an acknowledged write because of a test setting); off by default.
   */
  static async start(opts: { log?: (line: string) => void; durable?: boolean } = {}): Promise<PostgresServer> {
    const ids = await serverIds();
    // The run's own temp directory (temp-root.ts) is root's alone, out of the server user's reach: as root the server's
    // directory goes directly under the system's temp directory instead (stop() removes it).
    const parent = ids ? (process.env.SCALE_AGENT_TEST_SYSTEM_TMPDIR ?? tmpdir()) : tmpdir();
    const dir = mkdtempSync(join(parent, 'scale-agent-postgres-'));
    if (ids) chownSync(dir, ids.uid, ids.gid);
    const t0 = Date.now();
    const datadir = join(dir, 'data');
    const [cmd, args] = asServerUser(ids, findPostgresBinary('initdb'), [
      `--pgdata=${datadir}`,
      `--username=${SUPERUSER}`,
      '--auth=trust',
      '--encoding=UTF8',
      '--locale=C',
      // The data dir is thrown away with the test run: no need to flush it.
      '--no-sync',
    ]);
    await run(cmd, args);
    // Only TCP from 127.0.0.1 (the server listens there only), no local socket, no other host.
    writeFileSync(join(datadir, 'pg_hba.conf'), 'host all all 127.0.0.1/32 trust\n');
    if (ids) chownSync(join(datadir, 'pg_hba.conf'), ids.uid, ids.gid);
    const port = await freePort();
    const server = new PostgresServer(dir, port, ids, Boolean(opts.durable));
    await server.launch();
    opts.log?.(`postgres ready on 127.0.0.1:${port} (${Date.now() - t0} ms)`);
    return server;
  }

  /** Starts postgres on this data dir and port and waits until it takes connections. */
  private async launch(): Promise<void> {
    const [cmd, args] = asServerUser(this.ids, findPostgresBinary('postgres'), [
      '-D',
      this.datadir,
      '-c',
      `port=${this.port}`,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      // A test server: durability off unless asked for, connections plentiful.
      '-c',
      `fsync=${this.durable ? 'on' : 'off'}`,
      '-c',
      `synchronous_commit=${this.durable ? 'on' : 'off'}`,
      '-c',
      `full_page_writes=${this.durable ? 'on' : 'off'}`,
      '-c',
      'max_connections=300',
    ]);
    const proc = ServerProcess.start('postgres', cmd, args, this.logFile);
    this.proc = proc;
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      proc.assertRunning();
      const client = new pg.Client({ connectionString: this.url });
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        return;
      } catch (e) {
        await client.end().catch(() => {});
        if (Date.now() > deadline) {
          await this.stop();
          throw new Error(`postgres not ready after ${START_TIMEOUT_MS / 1000} s: ${String(e)}\n${proc.logTail()}`, {
            cause: e,
          });
        }
        await sleep(100);
      }
    }
  }

  /**
   * Sends `signal` to the postmaster and every process it forked. Not to a process group: each PostgreSQL backend
   * and auxiliary process calls setsid() and leads a group of its own, so a SIGSTOP of the postmaster's group alone
   * leaves the backends answering queries.
   */
  signal(signal: NodeJS.Signals): void {
    for (const pid of [this.pid, ...childrenOf(this.pid)]) {
      try {
        process.kill(pid, signal);
      } catch {
        // gone meanwhile
      }
    }
  }

  /** SIGKILL of the server and every backend, no grace: for fault injection. */
  async kill(): Promise<void> {
    this.signal('SIGKILL');
    await this.proc.kill();
  }

  /** Starts the server again on the same data dir and port (crash recovery included) and waits until it answers. */
  async restart(): Promise<void> {
    await this.proc.stop(10_000);
    await this.launch();
  }

  async stop(): Promise<void> {
    // SIGINT is PostgreSQL's fast shutdown (ends client sessions); SIGTERM would wait for every client to leave.
    if (this.proc.running) {
      try {
        process.kill(this.proc.pid, 'SIGINT');
      } catch {
        // already gone
      }
      for (let i = 0; i < 100 && this.proc.running; i++) await sleep(50);
    }
    await this.proc.stop(10_000);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Pids whose parent is `pid`, from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/**
 * The PostgreSQL server of a test file: SCALE_AGENT_TEST_POSTGRES_URL's (an existing server, e.g.
 * postgres://user:pass@host:5432/postgres, where the user may create databases) when set, else a private one started
 * here. `stop()` stops only a server it started.
 */
export async function testPostgres(
  opts: { log?: (line: string) => void } = {},
): Promise<{ url: string; stop(): Promise<void> }> {
  const given = process.env.SCALE_AGENT_TEST_POSTGRES_URL;
  if (given) return { url: given, stop: async () => {} };
  const server = await PostgresServer.start(opts);
  return { url: server.url, stop: () => server.stop() };
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Creates a fresh database on the server at `serverUrl` and returns its URL and a drop function. */
export async function createPostgresDatabase(
  serverUrl: string,
  prefix: string,
): Promise<{ url: string; database: string; drop(): Promise<void> }> {
  const database =
    `${prefix.replace(/[^a-zA-Z0-9_]/g, '_')}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`.toLowerCase();
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${quoteIdent(database)}`);
  const u = new URL(serverUrl);
  u.pathname = `/${database}`;
  return {
    url: u.toString(),
    database,
    // FORCE ends sessions still connected (a store a failed test did not close).
    drop: () => admin(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`),
  };
}

/**
 * A contract suite's factory (store-contract.ts) for a PostgreSQL backend: each test gets `open(url)` on a fresh
 * database of its own on the server at `serverUrl()`, closed and the database dropped after the test.
 */
export function onPostgresDatabases<T extends { close(): Promise<void> }>(
  serverUrl: () => string,
  prefix: string,
  open: (url: string) => T,
): { create(): Promise<T>; destroy(t: T): Promise<void> } {
  const drops = new WeakMap<T, () => Promise<void>>();
  return {
    create: async () => {
      const db = await createPostgresDatabase(serverUrl(), prefix);
      const t = open(db.url);
      drops.set(t, db.drop);
      return t;
    },
    destroy: async (t) => {
      await t.close();
      await drops.get(t)?.();
    },
  };
}
