import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { KubeClient, type KubeClientSource } from '../../../src/agent/kube/client.js';
import { executeOperation, type ExecutionResult } from '../../../src/agent/ops/index.js';
import { formatIssues, parseOperations } from '../../../src/plugin-server/api/descriptions/index.js';
import { kubectl, testEnv } from '../../infra/index.js';

/** The account the operations run as: a kubeconfig, loaded by the agent's own access layer. */
export type Kube = KubeClientSource;

export const adminKube = (): Kube => ({ kubeconfigFile: testEnv().kubeconfig });

const clients = new Map<string, Promise<KubeClient>>();

/** One KubeClient per kubeconfig for the whole file, as the agent keeps one per account. */
export function kubeClient(source: Kube): Promise<KubeClient> {
  const key = JSON.stringify(source);
  let c = clients.get(key);
  if (!c) {
    c = KubeClient.create(source);
    clients.set(key, c);
  }
  return c;
}

/** Parses a Clouddriver body exactly as the REST API will, then runs each operation with the executor. */
export async function runOps(
  kc: Kube,
  body: unknown,
  opts: { waitTimeoutMs?: number } = {},
): Promise<ExecutionResult[]> {
  const parsed = parseOperations(body, { endpoint: 'kubernetes' });
  if (!parsed.ok) throw new Error(`invalid body: ${formatIssues(parsed.errors).join('; ')}`);
  const out: ExecutionResult[] = [];
  const client = await kubeClient(kc);
  for (const op of parsed.operations)
    out.push(await executeOperation(client, op, { waitTimeoutMs: opts.waitTimeoutMs ?? 60_000 }));
  return out;
}

export async function runOne(kc: Kube, name: string, description: Record<string, unknown>): Promise<ExecutionResult> {
  const [r] = await runOps(kc, [{ [name]: description }]);
  return r as ExecutionResult;
}

export function expectOk(r: ExecutionResult): ExecutionResult {
  expect(r.error, r.messages.join('\n')).toBeUndefined();
  expect(r.ok).toBe(true);
  return r;
}

/** Parsed kubectl JSON: tests walk it freely and let the assertions say what must be there. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Obj = Record<string, any>;

export async function getJson<T = Obj>(args: string[]): Promise<T> {
  const { stdout } = await kubectl(['get', ...args, '-o', 'json']);
  return JSON.parse(stdout) as T;
}

export async function exists(args: string[]): Promise<boolean> {
  const r = await kubectl(['get', ...args, '--ignore-not-found', '-o', 'name']);
  return r.stdout.trim() !== '';
}

/** Polls a cluster fact until it holds; the controllers (GC, deployment controller) run asynchronously. */
export async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, tries = 300): Promise<T> {
  let v = await read();
  for (let i = 0; i < tries && !ok(v); i++) {
    await sleep(100);
    v = await read();
  }
  return v;
}

/** An Orca-ish stage context around a description: the keys Clouddriver must ignore. */
export function stageContext(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    cloudProvider: 'kubernetes',
    type: 'deployManifest',
    name: 'Deploy (Manifest)',
    refId: '1',
    requisiteStageRefIds: [],
    skipExpressionEvaluation: false,
    trafficManagement: { enabled: false, options: { enableTraffic: false, services: [] } },
    'kato.result.expected': true,
    user: 'anonymous',
    ...extra,
  };
}

export const deployment = (name: string, labels: Record<string, string> = { app: name }, image = 'nginx:1.25') => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name },
  spec: {
    replicas: 1,
    selector: { matchLabels: labels },
    template: { metadata: { labels }, spec: { containers: [{ name: 'main', image }] } },
  },
});
