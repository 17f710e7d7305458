import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/**
 * A plain JSON request to the API server with the kubeconfig's credentials. client-node's KubernetesObjectApi
 * serializes objects of kinds it has no model for (custom resources) as bare KubernetesObjects, dropping their spec;
 * the churn and the ledger write custom resources, so they go through here.
 */
export async function kubeRequest<T = unknown>(
  kc: KubeConfig,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<T> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(path, cluster.server);
  const opts: Parameters<typeof request>[1] = {
    method,
    headers: { 'content-type': contentType, accept: 'application/json' },
  };
  await kc.applyToHTTPSOptions(opts);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise<T>((resolve, reject) => {
    const req = request(url, { ...opts, timeout: 30_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => {
        if ((res.statusCode ?? 0) >= 300)
          reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`));
        else resolve((text ? JSON.parse(text) : undefined) as T);
      });
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
    req.end(payload);
  });
}

/** The REST path of an object (core group under /api, others under /apis), plural by the usual English rule. */
export function objectPath(apiVersion: string, kind: string, namespace: string, name?: string): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const lower = kind.toLowerCase();
  const plural = lower.endsWith('s') ? `${lower}es` : `${lower}s`;
  return `${base}/namespaces/${namespace}/${plural}${name ? `/${name}` : ''}`;
}
