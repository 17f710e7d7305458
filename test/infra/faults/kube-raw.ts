import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/**
 * A plain request to the API server with the kubeconfig's credentials, answered with its status and body whatever
 * the status (the faults probe for 429s and 500s); 0 when no answer came.
 */
export async function kubeFetch(
  kc: KubeConfig,
  method: Method,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; text: string; headers: Record<string, string | string[] | undefined> }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(path, cluster.server);
  const opts: Parameters<typeof request>[1] = {
    method,
    headers: { 'content-type': contentType, accept: 'application/json, text/plain' },
  };
  await kc.applyToHTTPSOptions(opts);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(url, { ...opts, timeout: 30_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
    req.end(payload);
  });
}

/**
 * A plain JSON request to the API server with the kubeconfig's credentials. client-node's KubernetesObjectApi
 * serializes objects of kinds it has no model for (custom resources) as bare KubernetesObjects, dropping their spec;
 * the churn and the ledger write custom resources, so they go through here.
 */
export async function kubeRequest<T = unknown>(
  kc: KubeConfig,
  method: Method,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<T> {
  const { status, text } = await kubeFetch(kc, method, path, body, contentType);
  if (status >= 300) throw new Error(`${method} ${path}: ${status} ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** The REST path of an object (core group under /api, others under /apis), plural by the usual English rule. */
export function objectPath(apiVersion: string, kind: string, namespace: string, name?: string): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const lower = kind.toLowerCase();
  const plural = lower.endsWith('s') ? `${lower}es` : `${lower}s`;
  return `${base}/namespaces/${namespace}/${plural}${name ? `/${name}` : ''}`;
}

/** Sum of a Prometheus counter's samples whose labels contain every `label="value"` given (the API server's /metrics). */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
