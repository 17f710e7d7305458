/**
 * One meaning of the deadline across the peer forward: two in-process replicas sharing one store, the account's
 * stand-in agent (TestAgent: the real protocol, no Kubernetes) on replica B, the operation posted to replica A. The
 * deadline A gives the operation is the one the agent receives from B, although B's own bound is far shorter.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { parsePluginServerConfig } from '../../../src/plugin-server/config.js';
import { PluginServer } from '../../../src/plugin-server/server.js';
import { MemoryTaskRepository } from '../../../src/plugin-server/tasks/memory.js';
import { decodeOperation, resultMessage } from '../../../src/shared/ops/index.js';
import { account, TestAgent } from './helpers.js';

const A_TIMEOUT_SECONDS = 300;
const B_TIMEOUT_SECONDS = 20;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

// Replicas answer each other's forwards only with the peer secret they share (http.peerAuth).
const peerSecretFile = join(mkdtempSync(join(tmpdir(), 'scale-agent-peer-deadline-')), 'peer-secret');
writeFileSync(peerSecretFile, `${'s'.repeat(64)}\n`, { mode: 0o600 });

async function replica(store: MemoryCacheStore, tasks: MemoryTaskRepository, timeoutSeconds: number) {
  const port = await freePort();
  const config = parsePluginServerConfig(
    `grpc: {host: 127.0.0.1, port: 0}\n` +
      `http: {host: 127.0.0.1, port: ${port}, advertiseUrl: 'http://127.0.0.1:${port}', ` +
      `peerAuth: {secretFile: '${peerSecretFile}'}}\n` +
      `accounts: {leaseSeconds: 3}\n` +
      `operations: {timeoutSeconds: ${timeoutSeconds}, agentWaitSeconds: 5, cacheWaitSeconds: 1}\n`,
  );
  const server = new PluginServer(config, { log: pino({ level: 'silent' }), store, tasks });
  const { grpcPort } = await server.start();
  return { server, base: `http://127.0.0.1:${port}`, address: `127.0.0.1:${grpcPort}` };
}

describe('the peer forward carries the deadline the posting replica gave', () => {
  let a: Awaited<ReturnType<typeof replica>>;
  let b: Awaited<ReturnType<typeof replica>>;
  let agent: TestAgent;

  beforeAll(async () => {
    // One store and one task store for both, as replicas on MySQL share them.
    const store = new MemoryCacheStore();
    const tasks = new MemoryTaskRepository();
    a = await replica(store, tasks, A_TIMEOUT_SECONDS);
    b = await replica(store, tasks, B_TIMEOUT_SECONDS);
    agent = new TestAgent(b.address);
    await agent.hello([account('dev')]);
  });
  afterAll(async () => {
    agent?.close();
    await a?.server.stop();
    await b?.server.stop();
  });

  it("sends the agent A's epoch deadline through B unchanged", async () => {
    // Replica A learns from the store that B's agent holds the account (bounds generous: the unit project runs many
    // files at once on a small machine, and this one once ran past 10 s there).
    for (let i = 0; ; i++) {
      const res = await fetch(`${a.base}/armory/accounts/dev`);
      const held = res.ok ? ((await res.json()) as { heldBy: unknown }).heldBy : null;
      if (typeof held === 'object' && held !== null) break;
      if (i > 300) throw new Error(`replica A never saw the account held by a peer (heldBy: ${JSON.stringify(held)})`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const posted = Date.now();
    const res = await fetch(`${a.base}/kubernetes/ops`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { scaleManifest: { account: 'dev', location: 'shop', manifestName: 'deployment web', replicas: 2 } },
      ]),
    });
    expect(res.status).toBe(200);
    const sent = (await agent.next((m) => m.operation !== undefined, 30_000)).operation!;
    const decoded = decodeOperation(sent, Date.now());
    if (!decoded.ok) throw new Error(decoded.error);
    // A's bound (300 s), not B's (20 s): B did not measure a duration again from its own receipt.
    expect(decoded.deadlineMs).toBeGreaterThanOrEqual(posted + A_TIMEOUT_SECONDS * 1000);
    expect(decoded.deadlineMs).toBeLessThanOrEqual(Date.now() + A_TIMEOUT_SECONDS * 1000);
    agent.send({ operationResult: resultMessage(sent.operationId, { ok: true, result: null, resourceVersions: {} }) });
  });
});
