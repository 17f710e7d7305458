/**
 * Shared by the operations end-to-end tests: a real plugin-server and agent as processes against the shared control
 * plane, Clouddriver-shaped requests over HTTP, and the fixtures in test/fixtures/ops/ rewritten to the test's
 * account and namespace.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { PluginServerProcess } from '../infra/processes.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Obj = Record<string, any>;

export interface TaskBody {
  id: string;
  requestId?: string;
  status: { phase: string; status: string; completed: boolean; failed: boolean; retryable: boolean };
  history: { phase: string; status: string }[];
  resultObjects: Obj[];
}

/** A fixture with its account and namespaces ("shop", "jobs", "batch") replaced. */
export function fixture(name: string, account: string, namespace: string): Obj[] {
  const text = readFileSync(new URL(`../fixtures/ops/${name}`, import.meta.url), 'utf8')
    .replaceAll('"k8s-prod"', JSON.stringify(account))
    .replaceAll(/"(shop|jobs|batch)"/g, JSON.stringify(namespace));
  return JSON.parse(text) as Obj[];
}

/**
 * Where an OpsClient sends its requests: a replica, or a Stack (its load balancer or first replica, read at each
 * request, so a client made before the stack starts works once it has).
 */
export type RestEndpoint = Pick<PluginServerProcess, 'httpBase' | 'get'>;

export class OpsClient {
  constructor(readonly server: RestEndpoint) {}

  async post(path: string, body: unknown): Promise<{ status: number; body: Obj }> {
    const res = await fetch(this.server.httpBase + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Obj };
  }

  /** POST /kubernetes/ops; expects 200 and returns the task id. */
  async submit(body: unknown, clientRequestId?: string): Promise<string> {
    const q = clientRequestId ? `?clientRequestId=${encodeURIComponent(clientRequestId)}` : '';
    const r = await this.post(`/kubernetes/ops${q}`, body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.resourceUri).toBe(`/task/${r.body.id as string}`);
    return r.body.id as string;
  }

  async task(id: string): Promise<TaskBody> {
    const r = await this.server.get<TaskBody>(`/task/${id}`);
    expect(r.status).toBe(200);
    return r.body;
  }

  /** Polls the task as Orca does (faster) until it completes. */
  async waitTask(id: string, timeoutMs = 120_000): Promise<TaskBody> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const t = await this.task(id);
      if (t.status.completed) return t;
      if (Date.now() > until) throw new Error(`task ${id} not complete after ${timeoutMs} ms: ${JSON.stringify(t)}`);
      await sleep(20);
    }
  }

  /** Submits and waits; fails the test (with the history) unless the task succeeded. */
  async run(body: unknown, clientRequestId?: string): Promise<TaskBody> {
    const t = await this.waitTask(await this.submit(body, clientRequestId));
    expect(t.status.failed, t.history.map((h) => h.status).join('\n')).toBe(false);
    return t;
  }

  async manifest(account: string, location: string, name: string): Promise<{ status: number; body: Obj }> {
    return this.server.get<Obj>(
      `/manifests/${account}/${location || '_'}/${encodeURIComponent(name)}?includeEvents=false`,
    );
  }
}

/** Orca's deployManifest body: `manifests` deployed through `account` into `namespace`, for application `app`. */
export function deployBody(account: string, app: string, namespace: string, manifests: object[]): Obj[] {
  return [{ deployManifest: { account, moniker: { app }, namespaceOverride: namespace, manifests } }];
}

/** A ConfigMap deployed unversioned (`strategy.spinnaker.io/versioned: false`): each deploy replaces the one object. */
export function unversionedConfigMap(name: string, data: Record<string, string>): Obj {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, annotations: { 'strategy.spinnaker.io/versioned': 'false' } },
    data,
  };
}
