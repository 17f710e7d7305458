import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection } from 'mysql2/promise';
import { run } from './exec.js';
import { freePort } from './ports.js';
import { ServerProcess } from './processes-group.js';

const START_TIMEOUT_MS = 60_000;

function findBinary(name: string): string {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin']) {
    if (existsSync(join(dir, name))) return join(dir, name);
  }
  throw new Error(`${name} not found; run scripts/test-deps.sh (installs mariadb-server from Debian's packages)`);
}

/** A throwaway MariaDB server (Debian's mariadb-server) on a temp data dir and a free loopback port. */
export class MariaDb {
  proc!: ServerProcess;

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly onTmpfs = false,
    private readonly durable = false,
  ) {}

  /** Root over TCP without a password; databases are created per test file. */
  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}/`;
  }

  get pid(): number {
    return this.proc.pid;
  }

  /** Its error log (startup, crash recovery, a full disk). */
  get logFile(): string {
    return join(this.dir, 'mariadbd.log');
  }

  /** The data dir (for disk-full faults: fill the tmpfs it sits on). */
  get datadir(): string {
    return join(this.dir, 'data');
  }

  /**
   * `tmpfsMb`: the data dir is a tmpfs of that size (needs the right to mount), so a test can fill the disk under a
   * running server and free it again.
   * `durable`: commits are flushed to the redo log as a production server does (the fault rig, where a SIGKILLed
   * server must keep every acknowledged write); otherwise the fast test setting, which may lose the last second of
   * commits when the server is killed.
   */
  static async start(
    opts: { log?: (line: string) => void; tmpfsMb?: number; durable?: boolean } = {},
  ): Promise<MariaDb> {
    const dir = mkdtempSync(join(tmpdir(), 'scale-agent-mariadb-'));
    const datadir = join(dir, 'data');
    mkdirSync(datadir);
    if (opts.tmpfsMb) await run('mount', ['-t', 'tmpfs', '-o', `size=${opts.tmpfsMb}m`, 'tmpfs', datadir]);
    const t0 = Date.now();
    await run(findBinary('mariadb-install-db'), [
      '--no-defaults',
      `--datadir=${datadir}`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      '--user=root',
    ]);
    const port = await freePort();
    const db = new MariaDb(dir, port, Boolean(opts.tmpfsMb), Boolean(opts.durable));
    await db.launch();
    opts.log?.(`mariadbd ready on 127.0.0.1:${port} (${Date.now() - t0} ms)`);
    return db;
  }

  /** Starts mariadbd on this data dir and port and waits until it takes connections. */
  private async launch(): Promise<void> {
    const proc = ServerProcess.start(
      'mariadbd',
      findBinary('mariadbd'),
      [
        '--no-defaults',
        `--datadir=${this.datadir}`,
        `--port=${this.port}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(this.dir, 'mysqld.sock')}`,
        `--pid-file=${join(this.dir, 'mysqld.pid')}`,
        '--user=root',
        '--skip-name-resolve',
        // A test server: durability off unless asked for (1 = write and flush the redo log at every commit, the
        // production setting; 0 = once a second), connections plentiful. No binary log, so sync_binlog is moot.
        `--innodb-flush-log-at-trx-commit=${this.durable ? 1 : 0}`,
        '--skip-log-bin',
        '--max-connections=1000',
        '--max-allowed-packet=64M',
      ],
      this.logFile,
    );
    this.proc = proc;
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      proc.assertRunning();
      try {
        const c = await createConnection({ host: '127.0.0.1', port: this.port, user: 'root' });
        await c.end();
        return;
      } catch (e) {
        if (Date.now() > deadline) {
          await this.stop();
          throw new Error(`mariadbd not ready after ${START_TIMEOUT_MS / 1000} s: ${String(e)}\n${proc.logTail()}`, {
            cause: e,
          });
        }
        await sleep(200);
      }
    }
  }

  /** SIGKILL (fault injection); restart() brings it back on the same data dir and port (crash recovery). */
  async kill(): Promise<void> {
    await this.proc.kill();
  }

  async restart(): Promise<void> {
    await this.proc.stop(10_000);
    await this.launch();
  }

  async stop(): Promise<void> {
    await this.proc.stop(10_000);
    if (this.onTmpfs) await run('umount', [this.datadir], { allowFail: true });
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Creates a fresh database on the server at `serverUrl` and returns its URL and a drop function. */
export async function createDatabase(
  serverUrl: string,
  prefix: string,
): Promise<{ url: string; database: string; drop(): Promise<void> }> {
  const database = `${prefix.replace(/[^a-zA-Z0-9_]/g, '_')}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const conn = await createConnection(serverUrl);
  try {
    await conn.query(`CREATE DATABASE \`${database}\``);
  } finally {
    await conn.end();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${database}`;
  return {
    url: u.toString(),
    database,
    async drop() {
      const c = await createConnection(serverUrl);
      try {
        await c.query(`DROP DATABASE IF EXISTS \`${database}\``);
      } finally {
        await c.end();
      }
    },
  };
}
