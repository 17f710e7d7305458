/**
 * Test helpers: a real plugin-server on loopback ports and a scripted agent speaking the real protocol through a
 * real grpc-js client.
 */
import { credentials, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { pino } from 'pino';
import { parsePluginServerConfig } from '../../../src/plugin-server/config.js';
import { PluginServer } from '../../../src/plugin-server/server.js';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { MemoryTaskRepository } from '../../../src/plugin-server/tasks/index.js';
import type { StoreBackend } from '../../../src/plugin-server/cache/store.js';
import { wireAccount } from '../../infra/records.js';
import {
  AgentServiceClient,
  ChangeType,
  PROTOCOL_VERSION,
  type Account,
  type AgentMessage,
  type Change,
  type ServerMessage,
} from '../../../src/shared/proto.js';

export async function startServer(
  yaml = '',
  store?: StoreBackend,
): Promise<{ server: PluginServer; base: string; address: string; logs: string[] }> {
  const logs: string[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => logs.push(line) });
  const config = parsePluginServerConfig(`grpc: {host: 127.0.0.1, port: 0}\nhttp: {host: 127.0.0.1, port: 0}\n${yaml}`);
  const server = new PluginServer(config, { log, store });
  const { grpcPort, httpPort } = await server.start();
  return { server, base: `http://127.0.0.1:${httpPort}`, address: `127.0.0.1:${grpcPort}`, logs };
}

/** What a TaskRunner needs around it in one process: a silent log, a memory store, its registry and task repository. */
export async function memoryTaskDeps() {
  const log = pino({ level: 'silent' });
  const store = new MemoryCacheStore();
  await store.init();
  const accounts = new AccountRegistry(store, log, { gracePeriodMs: 60_000 });
  const repo = new MemoryTaskRepository();
  await repo.init();
  return { log, store, accounts, repo };
}

export function account(name: string, host = '10.0.0.1:6443', fingerprint = 'aa'.repeat(32)): Account {
  return wireAccount(name, { apiServerHost: host, caFingerprint: fingerprint });
}

export function change(
  acct: string,
  type: 'ADDED' | 'MODIFIED' | 'DELETED',
  obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; resourceVersion: string } },
): Change {
  return {
    type: ChangeType[`CHANGE_TYPE_${type}`],
    account: acct,
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name,
    uid: `uid-${obj.metadata.name}`,
    resourceVersion: obj.metadata.resourceVersion,
    objectJson: Buffer.from(JSON.stringify(obj)),
  };
}

export function configMap(name: string, rv: string, data: Record<string, string> = {}, namespace = 'default') {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, resourceVersion: rv }, data };
}

/** A scripted agent: send messages, await server messages, see how the stream ended. */
export class TestAgent {
  readonly client: AgentServiceClient;
  readonly stream: ClientDuplexStream<AgentMessage, ServerMessage>;
  readonly received: ServerMessage[] = [];
  private waiters: { pred: (m: ServerMessage) => boolean; resolve: (m: ServerMessage) => void }[] = [];
  readonly ended: Promise<{ code: number; details: string }>;
  seq = 0;

  constructor(address: string) {
    this.client = new AgentServiceClient(address, credentials.createInsecure());
    this.stream = this.client.connect();
    this.stream.on('data', (m: ServerMessage) => {
      this.received.push(m);
      this.waiters = this.waiters.filter((w) => {
        if (!w.pred(m)) return true;
        w.resolve(m);
        return false;
      });
    });
    this.ended = new Promise((resolve) => {
      this.stream.on('error', (e: ServiceError) => resolve({ code: e.code, details: e.details }));
      this.stream.on('status', (s: { code: number; details: string }) => {
        if (s.code === 0) resolve({ code: 0, details: s.details });
      });
    });
  }

  send(m: AgentMessage): void {
    this.stream.write(m);
  }

  /**
   * The first server message `pred` accepts, received already or within `timeoutMs`. The timeout's error is made
   * here, so its stack names the test line that waited, and it says what was awaited and what had arrived.
   */
  next(pred: (m: ServerMessage) => boolean, timeoutMs = 10_000, what = 'a server message'): Promise<ServerMessage> {
    const found = this.received.find(pred);
    if (found) return Promise.resolve(found);
    const timedOut = new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const got = this.received.map((m) => Object.keys(m).filter((k) => m[k as keyof ServerMessage] != null));
        timedOut.message += `; received so far: ${JSON.stringify(got.flat())}`;
        reject(timedOut);
      }, timeoutMs);
      this.waiters.push({
        pred,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  async hello(
    accounts: Account[],
    agentId = 'agent-1',
    shareLoad = false,
  ): Promise<NonNullable<ServerMessage['welcome']>> {
    this.send({
      hello: {
        agentId,
        version: 'test',
        zone: 'z1',
        identity: {},
        accounts,
        protocolVersion: PROTOCOL_VERSION,
        shareLoad,
      },
    });
    return (await this.next((m) => m.welcome !== undefined, 10_000, `the welcome to ${agentId}`)).welcome!;
  }

  /** Sends a batch and waits until it is acknowledged. */
  async batch(changes: Change[]): Promise<number> {
    const seq = ++this.seq;
    this.send({ changeBatch: { seq, changes, observedAtMs: Date.now() } });
    await this.next((m) => (m.ack?.seq ?? 0) >= seq, 10_000, `the ack of batch ${seq}`);
    return seq;
  }

  async data(m: Omit<AgentMessage, 'changeBatch'>): Promise<void> {
    const seq = ++this.seq;
    const msg = Object.fromEntries(Object.entries(m).map(([k, v]) => [k, { ...(v as object), seq }])) as AgentMessage;
    this.send(msg);
    await this.next((x) => (x.ack?.seq ?? 0) >= seq, 10_000, `the ack of message ${seq}`);
  }

  close(): void {
    this.stream.end();
    this.client.close();
  }
}

export async function getJson(url: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.json() };
}

export async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
