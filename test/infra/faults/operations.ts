/**
 * Operations posted through the plugin-server's REST API while faults happen, as Orca posts them: each with its own
 * clientRequestId, the POST repeated with the same id until it is answered (a timeout or a refused connection says
 * nothing about whether the task exists), the task polled until it completes, and a failed, retryable task resumed
 * once (`POST /task/{id}:resume`, Orca's retry). Then the cluster says whether each operation happened exactly once:
 *
 * - a deploy creates ConfigMap `op-N`, versioned as Clouddriver does (`op-N-v000`), with its request id in data:
 *   lost when its task succeeded and no such ConfigMap exists, a duplicate when a second version (`-v001`) does;
 * - an append adds its request id to the `ledger` Widget's spec.applied list with a JSON patch, which is not
 *   idempotent: an operation run twice leaves its id twice (a duplicate).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { kubeRequest, objectPath } from './kube-raw.js';
import { WIDGET_GROUP } from './rig.js';

export type OpOutcome = 'succeeded' | 'failed-retryable' | 'failed' | 'rejected' | 'stuck' | 'unaccepted';

interface TaskStatus {
  status: { completed: boolean; failed: boolean; retryable: boolean };
  history: { status: string }[];
}

interface PostedOp {
  n: number;
  kind: 'deploy' | 'append';
  requestId: string;
  accepted: Promise<string | undefined>;
  taskId?: string;
  outcome?: OpOutcome;
  resumed?: boolean;
  lastStatus?: string;
  postedAt: number;
  endedAt?: number;
  /** The 4xx answer that refused the op. */
  rejected?: string;
}

export interface OpsReport {
  posted: number;
  outcomes: Record<OpOutcome, number>;
  resumed: number;
  /** Ops that did not end succeeded or failed-retryable, or that succeeded without their effect in the cluster. */
  lost: string[];
  /** Ops whose effect is in the cluster more than once. */
  duplicates: string[];
  /** Ops that ended failed, not retryable, or were refused with a 4xx (reported, not lost: the client was told). */
  failed: string[];
  /** POSTs answered 400 because the account was not known (yet), then repeated. */
  refusedUnknownAccount: number;
  /** The op that took longest from its POST to its end (resume included), and how long. */
  slowest?: { op: string; ms: number };
  /** Names of the ConfigMaps the settled deploys created (a long run deletes them to keep the cache's size). */
  configMaps: string[];
  /** Request ids of the settled appends (a long run takes them off the ledger: trimLedger). */
  appends: string[];
}

const LEDGER = 'ledger';
const ATTEMPT_TIMEOUT_MS = 5_000;
const SETTLE_POLLERS = 4;

export class OperationsLoad {
  private readonly ops: PostedOp[] = [];
  private running = false;
  private loop?: Promise<void>;
  private readonly runId = Math.random().toString(36).slice(2, 8);
  private seq = 0;
  private refusedUnknownAccount = 0;

  constructor(
    private readonly httpBase: string,
    private readonly account: string,
    private readonly namespace: string,
    private readonly intervalMs = 300,
  ) {}

  /** The ledger the appends write to (created once per namespace). */
  async prepare(kc: KubeConfig): Promise<void> {
    await kubeRequest(kc, 'POST', objectPath(`${WIDGET_GROUP}/v1`, 'Widget', this.namespace), {
      apiVersion: `${WIDGET_GROUP}/v1`,
      kind: 'Widget',
      metadata: { name: LEDGER, namespace: this.namespace },
      spec: { applied: [] },
    }).catch((e: unknown) => {
      if (!String(e).includes('AlreadyExists') && !String(e).includes('409')) throw e;
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        this.post();
        await sleep(this.intervalMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  get posted(): number {
    return this.ops.length;
  }

  private post(): void {
    const n = this.seq++;
    const kind = n % 2 === 0 ? 'deploy' : 'append';
    const requestId = `faults-${this.runId}-${n}`;
    const op: PostedOp = { n, kind, requestId, accepted: Promise.resolve(undefined), postedAt: Date.now() };
    op.accepted = this.submit(op, this.body(kind, n, requestId), Date.now() + 180_000).then((id) => {
      op.taskId = id;
      return id;
    });
    this.ops.push(op);
  }

  private body(kind: 'deploy' | 'append', n: number, requestId: string): unknown {
    if (kind === 'deploy') {
      return [
        {
          deployManifest: {
            account: this.account,
            moniker: { app: 'faults' },
            namespaceOverride: this.namespace,
            manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `op-${n}` }, data: { requestId } }],
          },
        },
      ];
    }
    return [
      {
        patchManifest: {
          account: this.account,
          location: this.namespace,
          manifestName: `Widget.${WIDGET_GROUP} ${LEDGER}`,
          options: { mergeStrategy: 'json' },
          patchBody: [{ op: 'add', path: '/spec/applied/-', value: requestId }],
        },
      },
    ];
  }

  /**
   * POSTs until answered with a task id (same clientRequestId every time). A 400 because the account is unknown is
   * retried too: a plugin-server on the memory store that restarted knows an account only once its agent is back
   * (counted in `refusedUnknownAccount`). Any other 4xx is the answer (`rejected`), and so is the deadline.
   */
  private async submit(op: PostedOp, body: unknown, deadline: number): Promise<string | undefined> {
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`${this.httpBase}/kubernetes/ops?clientRequestId=${encodeURIComponent(op.requestId)}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
        });
        const text = await res.text();
        const json = (text.startsWith('{') ? JSON.parse(text) : {}) as { id?: string };
        if (res.ok && json.id) return json.id;
        if (res.status >= 400 && res.status < 500) {
          if (!/credentials not found/.test(text)) {
            op.rejected = `${res.status} ${text.slice(0, 300)}`;
            return undefined;
          }
          this.refusedUnknownAccount += 1;
        }
      } catch {
        // No answer (refused, reset, timed out): the task may or may not exist; the same id again settles it.
      }
      await sleep(250);
    }
    return undefined;
  }

  /** The task, or the reason it could not be read (kept as the op's last status if it never completes). */
  private async task(id: string): Promise<TaskStatus | string> {
    try {
      const res = await fetch(`${this.httpBase}/task/${id}`, { signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS) });
      return res.ok ? ((await res.json()) as TaskStatus) : `GET /task: ${res.status}`;
    } catch (e) {
      return `GET /task: ${String(e)}`;
    }
  }

  /** Polls the op's task until it completes; resumes a failed, retryable one once. */
  private async finish(op: PostedOp, deadline: number): Promise<void> {
    await this.settleOne(op, deadline);
    op.endedAt = Date.now();
  }

  private async settleOne(op: PostedOp, deadline: number): Promise<void> {
    const id = await op.accepted;
    if (!id) {
      op.outcome = op.rejected ? 'rejected' : 'unaccepted';
      op.lastStatus = op.rejected;
      return;
    }
    while (Date.now() < deadline) {
      const t = await this.task(id);
      if (typeof t === 'string') op.lastStatus = t;
      else if (t.status.completed) {
        op.lastStatus = t.history.at(-1)?.status;
        if (!t.status.failed) {
          op.outcome = 'succeeded';
          return;
        }
        if (!t.status.retryable) {
          op.outcome = 'failed';
          return;
        }
        if (op.resumed) {
          op.outcome = 'failed-retryable';
          return;
        }
        const r = await fetch(`${this.httpBase}/task/${id}:resume`, { method: 'POST' }).catch(() => undefined);
        if (r?.ok) op.resumed = true;
      }
      await sleep(100);
    }
    op.outcome = 'stuck';
  }

  /**
   * Takes settled appends' ids off the ledger, as a long run deletes the deploys' ConfigMaps: otherwise the ledger
   * grows by an id per append for the whole run, and with it every watch event, cache row and patch result of it
   * (a soak would measure its own load growing). One JSON patch of removals by index, each guarded by a `test` of
   * its value, highest index first: appends running meanwhile only add at the end, so no index moves under it, and
   * if one did the patch fails as a whole. Returns how many ids it removed.
   */
  async trimLedger(kc: KubeConfig, requestIds: string[]): Promise<number> {
    const drop = new Set(requestIds);
    if (drop.size === 0) return 0;
    const path = objectPath(`${WIDGET_GROUP}/v1`, 'Widget', this.namespace, LEDGER);
    const { spec } = await kubeRequest<{ spec: { applied: string[] } }>(kc, 'GET', path);
    const patch: object[] = [];
    for (let i = spec.applied.length - 1; i >= 0; i--) {
      const id = spec.applied[i]!;
      if (!drop.has(id)) continue;
      patch.push({ op: 'test', path: `/spec/applied/${i}`, value: id }, { op: 'remove', path: `/spec/applied/${i}` });
    }
    if (patch.length > 0) await kubeRequest(kc, 'PATCH', path, patch, 'application/json-patch+json');
    return patch.length / 2;
  }

  /**
   * After the fault has been lifted: every op settled (within `timeoutMs`), then checked in the cluster. Resets the
   * list, so the next fault's report covers only the ops posted since.
   */
  async settle(kc: KubeConfig, timeoutMs = 120_000): Promise<OpsReport> {
    const ops = this.ops.splice(0);
    const deadline = Date.now() + timeoutMs;
    // A few pollers, not one per op: each concurrent fetch holds a keep-alive connection to the plugin-server,
    // and hundreds of them would show up as the server's open descriptors in a soak.
    const queue = [...ops];
    const poller = async () => {
      for (let op = queue.shift(); op; op = queue.shift()) await this.finish(op, deadline);
    };
    await Promise.all(Array.from({ length: SETTLE_POLLERS }, poller));
    const ledger = await kubeRequest<{ spec: { applied: string[] } }>(
      kc,
      'GET',
      objectPath(`${WIDGET_GROUP}/v1`, 'Widget', this.namespace, LEDGER),
    );
    const counts = new Map<string, number>();
    for (const id of ledger.spec.applied) counts.set(id, (counts.get(id) ?? 0) + 1);
    const configMaps = await kubeRequest<{ items: { metadata: { name: string }; data?: { requestId?: string } }[] }>(
      kc,
      'GET',
      objectPath('v1', 'ConfigMap', this.namespace),
    );
    const settled = new Set(ops.map((o) => o.requestId));
    const deployed = new Map<string, number>();
    const names: string[] = [];
    for (const c of configMaps.items) {
      const id = c.data?.requestId;
      if (!id) continue;
      deployed.set(id, (deployed.get(id) ?? 0) + 1);
      if (settled.has(id)) names.push(c.metadata.name);
    }

    const report: OpsReport = {
      posted: ops.length,
      outcomes: { succeeded: 0, 'failed-retryable': 0, failed: 0, rejected: 0, stuck: 0, unaccepted: 0 },
      resumed: ops.filter((o) => o.resumed).length,
      lost: [],
      duplicates: [],
      failed: [],
      refusedUnknownAccount: this.refusedUnknownAccount,
      configMaps: names,
      appends: ops.filter((o) => o.kind === 'append').map((o) => o.requestId),
    };
    this.refusedUnknownAccount = 0;
    const slowest = ops.reduce<PostedOp | undefined>(
      (a, o) => (!a || (o.endedAt ?? 0) - o.postedAt > (a.endedAt ?? 0) - a.postedAt ? o : a),
      undefined,
    );
    if (slowest) {
      report.slowest = {
        op: `${slowest.kind} ${slowest.requestId}${slowest.resumed ? ' (resumed)' : ''}: ${slowest.lastStatus ?? ''}`,
        ms: (slowest.endedAt ?? Date.now()) - slowest.postedAt,
      };
    }
    for (const op of ops) {
      const outcome = op.outcome ?? 'stuck';
      report.outcomes[outcome] += 1;
      const label = `${op.kind} ${op.requestId} (${outcome}${op.lastStatus ? `: ${op.lastStatus}` : ''})`;
      const applied = (op.kind === 'deploy' ? deployed : counts).get(op.requestId) ?? 0;
      if (outcome === 'stuck' || outcome === 'unaccepted' || (outcome === 'succeeded' && applied === 0)) {
        report.lost.push(label);
      }
      if (outcome === 'failed' || outcome === 'rejected') report.failed.push(label);
      if (applied > 1) report.duplicates.push(`${label} applied ${applied} times`);
    }
    return report;
  }
}
