/**
 * The bare operation baselines' parts, shared by bench/operations.ts and its relay floor (bare-relay-main.ts): the
 * Deployment every run applies, and a server-side apply of it over one warm node:http2 connection.
 */
import http2 from 'node:http2';
import type { SecureContextOptions } from 'node:tls';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';

/** A one-replica Deployment; a new image each run makes every apply a real rollout step. */
export function deployment(namespace: string, name: string, image: string): KubernetesObject & Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image }] } },
    },
  };
}

/**
 * A server-side apply over one warm HTTP/2 connection of node:http2, with the kubeconfig's credentials: the request
 * the agent makes, with nothing around it (of `manifest`'s object: the plain Deployment unless given another). The
 * client-node baseline goes over HTTP/1.1 and, in the API server's audit log, took ~29 ms at p50 from sending to the
 * server receiving its request (the agent: 2.7 ms), so alone it would flatter the ratios.
 */
export async function bareHttp2Applier(
  kc: KubeConfig,
  namespace: string,
  name: string,
  manifest: (namespace: string, name: string, image: string) => Record<string, unknown> = deployment,
): Promise<{ apply(image: string): Promise<void>; close(): void }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig: no current cluster');
  const opts: SecureContextOptions & { headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(opts);
  const session = http2.connect(cluster.server, { ca: opts.ca, cert: opts.cert, key: opts.key });
  session.on('error', () => undefined);
  const path = `/apis/apps/v1/namespaces/${namespace}/deployments/${name}?fieldManager=bench&force=true`;
  return {
    async apply(image) {
      const stream = session.request({
        ':method': 'PATCH',
        ':path': path,
        'content-type': 'application/apply-patch+yaml',
        accept: 'application/json',
        ...(opts.headers ?? {}),
      });
      stream.end(JSON.stringify(manifest(namespace, name, image)));
      let status = 0;
      stream.once('response', (h) => (status = Number(h[':status'])));
      const chunks: Buffer[] = [];
      for await (const c of stream) chunks.push(c as Buffer);
      if (status < 200 || status >= 300) throw new Error(`bare HTTP/2 apply: ${status} ${Buffer.concat(chunks)}`);
    },
    close: () => session.close(),
  };
}

type Metadata = { labels?: Record<string, string>; annotations?: Record<string, string> };

/**
 * The Deployment as a deploy through scale-agent submits it: the plain one with the labels and annotations the deploy
 * wrote on the object and its pod template (Spinnaker's moniker and artifact annotations and labels, as Clouddriver
 * writes them, and scale-agent's config hash), copied from `deployed`, the object that deploy left, less what the
 * controller adds. The API server does more for each field a server-side apply owns, so the deploy's request is a
 * little more work than the plain one's (bench/profiles/operations-tail.md).
 */
export function asDeployedBy(deployed: {
  metadata?: Metadata;
  spec?: { template?: { metadata?: Metadata } };
}): (namespace: string, name: string, image: string) => Record<string, unknown> {
  const own = (m: Metadata | undefined) => ({
    labels: { ...m?.labels },
    annotations: Object.fromEntries(
      Object.entries(m?.annotations ?? {}).filter(([k]) => k !== 'deployment.kubernetes.io/revision'),
    ),
  });
  const top = own(deployed.metadata);
  const template = own(deployed.spec?.template?.metadata);
  return (namespace, name, image) => {
    const d = deployment(namespace, name, image) as {
      metadata: Metadata;
      spec: { template: { metadata: Metadata } };
    } & Record<string, unknown>;
    Object.assign(d.metadata, { labels: { ...top.labels }, annotations: { ...top.annotations } });
    const t = d.spec.template.metadata;
    Object.assign(t, { labels: { ...template.labels, ...t.labels }, annotations: { ...template.annotations } });
    return d;
  };
}
