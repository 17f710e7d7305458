/**
 * One simulated agent speaking the real protocol: Hello with M accounts, a full sync of K objects per account
 * (SyncStart, ADDED batches, SyncEnd), then a steady change rate. It honours the server's flow-control window
 * (Welcome.max_unacked_bytes, cumulative Acks) exactly as the real agent must, and answers operations with a
 * plausible successful result. It counts what it sends so the generator's own rate is reported.
 */
import { createHash } from 'node:crypto';
import type { ChannelCredentials } from '@grpc/grpc-js';
import { ChangeType, PROTOCOL_VERSION, type ServerMessage, type Welcome } from '../../src/shared/proto.js';
import { configMapJson } from '../lib/objects.js';
import { RawAgentClient, encodeAgentMessage, type AgentMessageInit, type RawStream } from '../lib/raw-client.js';

export interface FakeAgentOptions {
  address: string;
  credentials?: ChannelCredentials;
  /** TLS server name to verify when it differs from the address's host. */
  serverName?: string;
  agentId: string;
  accounts: number;
  objectsPerAccount: number;
  objectBytes: number;
  batchSize: number;
  /** Account name prefix; names are `${prefix}-${agentId}-${i}` so fake clusters never collide. */
  accountPrefix?: string;
  /**
   * The objects of each account's full sync, of any kinds (default: `objectsPerAccount` ConfigMaps of `objectBytes`).
   * Steady-state changes (changeBatch) always modify ConfigMaps.
   */
  workload?: (account: string) => FakeObject[];
  /** Sends a Heartbeat this often while connected, as the real agent does when it has nothing else to send. */
  heartbeatMs?: number;
}

/** One object of a workload, with the kind as the agent's discovery would describe it. */
export interface FakeObject {
  kind: { group: string; version: string; kind: string; resource: string; namespaced: boolean };
  namespace: string;
  name: string;
  uid: string;
  json: Buffer;
}

export interface FakeAgentStats {
  sentMessages: number;
  sentChanges: number;
  sentBytes: number;
  ackedSeq: number;
  operationsAnswered: number;
  rejectedAccounts: number;
  windowWaits: number;
}

const KIND = { group: '', version: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true };

export class FakeAgent {
  readonly stats: FakeAgentStats = {
    sentMessages: 0,
    sentChanges: 0,
    sentBytes: 0,
    ackedSeq: 0,
    operationsAnswered: 0,
    rejectedAccounts: 0,
    windowWaits: 0,
  };
  readonly accountNames: string[];
  private client?: RawAgentClient;
  private stream?: RawStream;
  private seq = 0;
  private rv = 1000;
  private window = 8 * 1024 * 1024;
  private readonly unacked: { seq: number; bytes: number; sentAt: number }[] = [];
  /** Send→ack times (ms) of data messages: the server's change→store lag as the agent sees it. */
  readonly ackLatenciesMs: number[] = [];
  trackAckLatency = false;
  private unackedBytes = 0;
  private ackWaiters: (() => void)[] = [];
  private welcome?: Promise<Welcome>;
  private heartbeats?: NodeJS.Timeout;
  private closedError?: Error;

  constructor(private readonly opts: FakeAgentOptions) {
    this.accountNames = Array.from(
      { length: opts.accounts },
      (_, i) => `${opts.accountPrefix ?? 'fake'}-${opts.agentId}-${i}`,
    );
  }

  /** Opens the stream and sends Hello; resolves with the server's Welcome. */
  connect(): Promise<Welcome> {
    this.client = new RawAgentClient(this.opts.address, this.opts.credentials, this.opts.serverName);
    const stream = this.client.connect();
    this.stream = stream;
    this.welcome = new Promise<Welcome>((resolve, reject) => {
      stream.on('data', (m: ServerMessage) => {
        if (m.welcome) {
          this.window = Number(m.welcome.maxUnackedBytes) || this.window;
          this.stats.rejectedAccounts = m.welcome.rejectedAccounts.length;
          resolve(m.welcome);
        } else if (m.ack) {
          this.onAck(Number(m.ack.seq));
        } else if (m.operation) {
          this.answerOperation(m.operation.operationId, m.operation.account);
        }
      });
      stream.on('error', (e: Error) => {
        this.closedError = e;
        reject(e);
        this.wakeAll();
      });
      stream.on('end', () => {
        this.closedError ??= new Error('stream ended by server');
        this.wakeAll();
      });
    });
    if (this.opts.heartbeatMs) {
      // A stream the server hears nothing on is closed as idle (sessions.ts), with its accounts orphaned.
      this.heartbeats = setInterval(() => {
        if (!this.closedError) this.write(encodeAgentMessage({ heartbeat: { sentAtMs: Date.now() } }));
      }, this.opts.heartbeatMs);
      this.heartbeats.unref();
    }
    this.write(
      encodeAgentMessage({
        hello: {
          agentId: this.opts.agentId,
          version: 'fake-agent',
          zone: 'bench',
          identity: { generator: 'bench/fake-agents' },
          protocolVersion: PROTOCOL_VERSION,
          accounts: this.accountNames.map((name) => ({
            name,
            cluster: {
              apiServerHost: `${name}.fake.invalid:6443`,
              caFingerprint: createHash('sha256').update(name).digest('hex'),
              kubernetesVersion: 'v1.36.3',
            },
            namespaces: [],
            omitNamespaces: [],
            kinds: this.opts.workload ? [...new Set(this.opts.workload(name).map((o) => o.kind.kind))] : ['ConfigMap'],
            omitKinds: [],
          })),
        },
      }),
    );
    return this.welcome;
  }

  /**
   * Encodes a full sync of every account (SyncStart, ADDED batches, SyncEnd) without sending it, so a benchmark
   * can time the sending alone. Sequence numbers are assigned now: send the result before anything else.
   */
  prepareSync(): { seq: number; bytes: Buffer; changes: number }[] {
    const out: { seq: number; bytes: Buffer; changes: number }[] = [];
    const push = (m: AgentMessageInit, seq: number, changes = 0) =>
      out.push({ seq, bytes: encodeAgentMessage(m), changes });
    for (const account of this.accountNames) {
      if (this.opts.workload) {
        this.prepareWorkload(account, this.opts.workload(account), push);
        continue;
      }
      let seq = this.nextSeq();
      push({ syncStart: { seq, account, kind: KIND, namespace: '' } }, seq);
      for (let i = 0; i < this.opts.objectsPerAccount; i += this.opts.batchSize) {
        const n = Math.min(this.opts.batchSize, this.opts.objectsPerAccount - i);
        seq = this.nextSeq();
        push({ changeBatch: { seq, changes: this.changes(account, i, n, ChangeType.CHANGE_TYPE_ADDED) } }, seq, n);
      }
      seq = this.nextSeq();
      push({ syncEnd: { seq, account, kind: KIND, namespace: '', resourceVersion: String(this.rv) } }, seq);
    }
    return out;
  }

  /** One full sync per kind of the account's workload objects. */
  private prepareWorkload(
    account: string,
    objects: FakeObject[],
    push: (m: AgentMessageInit, seq: number, changes?: number) => void,
  ): void {
    const byKind = new Map<string, FakeObject[]>();
    for (const o of objects) {
      const list = byKind.get(o.kind.kind);
      if (list) list.push(o);
      else byKind.set(o.kind.kind, [o]);
    }
    for (const list of byKind.values()) {
      const kind = list[0]!.kind;
      const apiVersion = kind.group ? `${kind.group}/${kind.version}` : kind.version;
      let seq = this.nextSeq();
      push({ syncStart: { seq, account, kind, namespace: '' } }, seq);
      for (let i = 0; i < list.length; i += this.opts.batchSize) {
        const batch = list.slice(i, i + this.opts.batchSize).map((o) => ({
          type: ChangeType.CHANGE_TYPE_ADDED,
          account,
          apiVersion,
          kind: kind.kind,
          namespace: o.namespace,
          name: o.name,
          uid: o.uid,
          resourceVersion: String(++this.rv),
          objectJson: o.json,
        }));
        seq = this.nextSeq();
        push({ changeBatch: { seq, changes: batch } }, seq, batch.length);
      }
      seq = this.nextSeq();
      push({ syncEnd: { seq, account, kind, namespace: '', resourceVersion: String(this.rv) } }, seq);
    }
  }

  /** Sends prepared messages within the flow-control window; resolves when all are acked. */
  async sendPrepared(msgs: { seq: number; bytes: Buffer; changes: number }[]): Promise<void> {
    for (const m of msgs) {
      await this.sendBytes(m.seq, m.bytes);
      this.stats.sentChanges += m.changes;
    }
    await this.drained();
  }

  /** Full sync of every account; resolves when everything is acked. */
  async sync(): Promise<void> {
    await this.sendPrepared(this.prepareSync());
  }

  /** One batch of MODIFIED changes to random existing objects of a random account. */
  async changeBatch(n: number): Promise<void> {
    const account = this.accountNames[Math.floor(Math.random() * this.accountNames.length)]!;
    const start = Math.floor(Math.random() * Math.max(1, this.opts.objectsPerAccount - n));
    await this.sendChanges(account, start, n, ChangeType.CHANGE_TYPE_MODIFIED);
  }

  private async sendChanges(account: string, start: number, n: number, type: ChangeType): Promise<void> {
    const changes = this.changes(account, start, n, type);
    this.stats.sentChanges += n;
    const seq = this.nextSeq();
    await this.sendBytes(seq, encodeAgentMessage({ changeBatch: { seq, changes, observedAtMs: Date.now() } }));
  }

  private changes(account: string, start: number, n: number, type: ChangeType) {
    const changes = [];
    for (let j = 0; j < n; j++) {
      const name = `cm-${start + j}`;
      const resourceVersion = String(++this.rv);
      changes.push({
        type,
        account,
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'bench',
        name,
        uid: `${account}-${name}`,
        resourceVersion,
        objectJson: configMapJson({ namespace: 'bench', name, resourceVersion, bytes: this.opts.objectBytes }),
      });
    }
    return changes;
  }

  private nextSeq(): number {
    return ++this.seq;
  }

  /** Sends a data message once the flow-control window has room for it. */
  private async sendBytes(seq: number, bytes: Buffer): Promise<void> {
    while (this.unackedBytes > 0 && this.unackedBytes + bytes.length > this.window) {
      this.stats.windowWaits++;
      await new Promise<void>((r) => this.ackWaiters.push(r));
      if (this.closedError) throw this.closedError;
    }
    this.unacked.push({ seq, bytes: bytes.length, sentAt: performance.now() });
    this.unackedBytes += bytes.length;
    this.write(bytes);
  }

  private write(bytes: Buffer): void {
    if (this.closedError) throw this.closedError;
    this.stats.sentMessages++;
    this.stats.sentBytes += bytes.length;
    // Paced by the unacknowledged-bytes window (as the agent is), not by the stream's buffer. An `events.once` for
    // 'drain' here waited for nothing and, left pending when the stream failed, crashed the benchmark with an
    // unhandled rejection instead of reporting the stream's error.
    this.stream!.write(bytes);
  }

  private onAck(seq: number): void {
    this.stats.ackedSeq = seq;
    const now = performance.now();
    while (this.unacked.length && this.unacked[0]!.seq <= seq) {
      const m = this.unacked.shift()!;
      this.unackedBytes -= m.bytes;
      if (this.trackAckLatency) this.ackLatenciesMs.push(now - m.sentAt);
    }
    this.wakeAll();
  }

  private wakeAll(): void {
    const w = this.ackWaiters;
    this.ackWaiters = [];
    for (const r of w) r();
  }

  /** Resolves when every data message sent so far is acked (applied to the server's cache). */
  async drained(): Promise<void> {
    while (this.unacked.length) {
      if (this.closedError) throw this.closedError;
      await new Promise<void>((r) => this.ackWaiters.push(r));
    }
  }

  private answerOperation(operationId: string, account: string): void {
    this.stats.operationsAnswered++;
    const result = { kind: 'fake', account, manifests: [] };
    this.write(
      encodeAgentMessage({
        operationResult: {
          operationId,
          ok: true,
          error: '',
          resultJson: Buffer.from(JSON.stringify(result)),
          resourceVersions: {},
        },
      }),
    );
  }

  close(): void {
    clearInterval(this.heartbeats);
    this.stream?.end();
    this.client?.close();
  }
}
