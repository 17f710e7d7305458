import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection } from 'mysql2/promise';
import { describe, expect, it } from 'vitest';
import { ControlPlane, MariaDb, createTestDatabase, pidAlive, run } from '../../infra/index.js';

async function waitGone(pids: number[]): Promise<number[]> {
  for (let i = 0; i < 50 && pids.some(pidAlive); i++) await sleep(100);
  return pids.filter(pidAlive);
}

describe('MariaDB', () => {
  it('serves the shared test database: create a table, write and read a row', async () => {
    const db = await createTestDatabase('infra');
    const conn = await createConnection(db.url);
    try {
      await conn.query('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL)');
      await conn.query('INSERT INTO t VALUES (?, ?)', [1, 'hello']);
      const [rows] = await conn.query('SELECT v FROM t WHERE id = 1');
      expect(rows).toEqual([{ v: 'hello' }]);
      const [ver] = await conn.query('SELECT VERSION() AS v');
      expect((ver as { v: string }[])[0]?.v).toMatch(/MariaDB/);
    } finally {
      await conn.end();
      await db.drop();
    }
  });

  it('a private server stops without leaving mariadbd behind', async () => {
    const db = await MariaDb.start();
    const pid = db.pid;
    expect(pidAlive(pid)).toBe(true);
    await db.stop();
    expect(await waitGone([pid])).toEqual([]);
  });
});

describe('private control plane', () => {
  it('starts, writes an admin kubeconfig, survives an apiserver kill/restart, and stops without leftovers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cp-lifecycle-'));
    const cp = await ControlPlane.start({ dir });
    const pids = cp.pids();
    try {
      expect(pids).toHaveLength(3);
      const kubectl = join(cp.binDir, 'kubectl');
      await run(kubectl, ['--kubeconfig', cp.kubeconfig, 'create', 'configmap', 'survivor', '--from-literal=k=v']);
      await cp.kill('kube-apiserver');
      const down = await run(
        kubectl,
        ['--kubeconfig', cp.kubeconfig, 'get', 'cm', 'survivor', '--request-timeout=3s'],
        {
          allowFail: true,
        },
      );
      expect(down.code).not.toBe(0);
      await cp.startComponent('kube-apiserver');
      const back = await run(kubectl, [
        '--kubeconfig',
        cp.kubeconfig,
        'get',
        'cm',
        'survivor',
        '-o',
        'jsonpath={.data.k}',
      ]);
      expect(back.stdout).toBe('v'); // data lives in etcd and outlives the apiserver
    } finally {
      const all = [...pids, ...cp.pids()];
      await cp.stop();
      expect(await waitGone(all)).toEqual([]);
    }
  });
});
