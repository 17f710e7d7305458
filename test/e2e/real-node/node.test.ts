/**
 * A real node (kubelet, containerd, runc, CNI bridge, kube-proxy, CoreDNS) runs pods from locally built images,
 * and leaves the machine as it found it. Runs in the `real-node` project: one file at a time, after the parallel
 * projects (see vitest.config.ts); needs root (test/infra/real-node/preflight.ts says what exactly).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RealNode, layout } from '../../infra/real-node/index.js';
import { waitFor } from '../../infra/wait.js';

const ns = 'node-test';

function web(name: string, replicas: number): object[] {
  const labels = { app: name };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: ns },
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: 'http',
                image: layout.IMAGES.testHttp,
                imagePullPolicy: 'Never',
                ports: [{ containerPort: 8080 }],
                readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
                securityContext: { runAsNonRoot: true, runAsUser: 65534, readOnlyRootFilesystem: true },
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns },
      spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
    },
  ];
}

describe('a real node', () => {
  let node: RealNode;
  let stopped: string[] | undefined;
  beforeAll(async () => {
    node = await RealNode.start({ log: (l) => console.error(`[real-node] ${l}`) });
  }, 600_000);
  afterAll(async () => {
    if (node && !stopped) await node.stop();
  }, 180_000);

  it('registers and goes Ready with its private address', async () => {
    const { stdout } = await node.kubectl(['get', 'node', layout.NODE_NAME, '-o', 'json']);
    const n = JSON.parse(stdout) as {
      status: { addresses: { type: string; address: string }[]; conditions: { type: string; status: string }[] };
    };
    expect(n.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(n.status.addresses).toContainEqual({ type: 'InternalIP', address: layout.NODE_IP });
  });

  it('runs a Deployment of a locally built image with an HTTP readiness probe to Available', async () => {
    await node.kubectl(['create', 'namespace', ns]);
    await node.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...web('web', 2), ...web('client', 1)] }),
    });
    for (const d of ['web', 'client']) {
      await node.kubectl(['-n', ns, 'wait', '--for=condition=Available', `deployment/${d}`, '--timeout=120s'], {
        timeoutMs: 130_000,
      });
    }
    const { stdout } = await node.kubectl(['-n', ns, 'get', 'pods', '-l', 'app=web', '-o', 'json']);
    const pods = (
      JSON.parse(stdout) as { items: { status: { podIP: string; containerStatuses: { ready: boolean }[] } }[] }
    ).items;
    expect(pods).toHaveLength(2);
    for (const p of pods) {
      expect(p.status.containerStatuses.every((c) => c.ready)).toBe(true);
      expect(p.status.podIP).toMatch(/^10\.250\.128\./);
    }
  });

  it('lets a pod reach another by Service name, through CoreDNS and kube-proxy', async () => {
    const names = await node.kubectl([
      '-n',
      ns,
      'get',
      'pods',
      '-l',
      'app=web',
      '-o',
      'jsonpath={.items[*].metadata.name}',
    ]);
    const webPods = names.stdout.split(' ').filter(Boolean);
    // The API server proxies to the client pod, which fetches from `web` by name: cluster DNS gives the Service's
    // ClusterIP, kube-proxy's rules send it to a web pod, whose host name comes back.
    // Available pods are not yet reachable through the Service: the endpoints controller publishes them and
    // kube-proxy then rewrites its rules on its own schedule; until then the ClusterIP rejects (connection
    // refused), as it would for any client. So wait for the published endpoints, then for the first answer.
    await waitFor('2 ready endpoints of Service web', async () => {
      const { stdout } = await node.kubectl([
        '-n',
        ns,
        'get',
        'endpointslices',
        '-l',
        'kubernetes.io/service-name=web',
        '-o',
        'json',
      ]);
      const slices = (JSON.parse(stdout) as { items: { endpoints?: { conditions?: { ready?: boolean } }[] }[] }).items;
      return slices.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready).length === 2;
    });
    for (const url of [`http://web.${ns}.svc.${layout.CLUSTER_DOMAIN}/`, 'http://web/']) {
      const path = `/api/v1/namespaces/${ns}/services/client:80/proxy/fetch?url=${encodeURIComponent(url)}`;
      const stdout = await waitFor(
        `an answer from ${url}`,
        async () => (await node.kubectl(['get', '--raw', path])).stdout,
        30_000,
      );
      const [status, host] = stdout.split(' ');
      expect(status).toBe('200');
      expect(webPods).toContain(host);
    }
  });

  it('puts the machine back as it was when it stops (sysctls, iptables, mounts, links, routes, cgroups, paths)', async () => {
    stopped = await node.stop();
    expect(stopped).toEqual([]);
  }, 180_000);
});
