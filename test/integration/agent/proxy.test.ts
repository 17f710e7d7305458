import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { KubeClient } from '../../../src/agent/kube/client.js';
import { JsonLineSplitter } from '../../../src/agent/kube/json-lines.js';
import { executeOperation } from '../../../src/agent/ops/index.js';
import { parseOperations } from '../../../src/plugin-server/api/descriptions/index.js';
import { createNamespace, kubectl, testEnv } from '../../infra/index.js';

/**
 * kubeconfig `proxy-url` and `tls-server-name`, through a real HTTP CONNECT proxy (node:http's 'connect' event,
 * tunnelling bytes to the real API server). The kubeconfig names the API server by a host that does not resolve
 * here — only the proxy knows where it is, as a corporate proxy resolves names the workstation cannot — and that
 * name is not in the serving certificate, so TLS only verifies with `tls-server-name: kubernetes`. Watches and
 * operations go through the same access layer, so both must be seen crossing the proxy.
 */
const HIDDEN_HOST = 'api.scale-agent.invalid';

interface Proxy {
  url: string;
  tunnels: string[];
  close(): Promise<void>;
}

async function startProxy(opts: { refuse?: boolean } = {}): Promise<Proxy> {
  const apiPort = Number(new URL(testEnv().server).port);
  const tunnels: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    tunnels.push(req.url ?? '');
    sockets.add(client);
    if (opts.refuse) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
      return;
    }
    const [host, port] = (req.url ?? '').split(':');
    if (host !== HIDDEN_HOST || Number(port) !== apiPort) {
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      return;
    }
    const upstream = net.connect(apiPort, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tunnels,
    close: async () => {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/** The admin kubeconfig, rewritten to name the API server by the hidden host, through `proxyUrl`. */
function proxiedKubeconfig(proxyUrl: string | undefined, tlsServerName: string | undefined): string {
  const kc = parse(readFileSync(testEnv().kubeconfig, 'utf8')) as {
    clusters: { cluster: Record<string, unknown> }[];
  };
  const port = new URL(testEnv().server).port;
  for (const c of kc.clusters) {
    c.cluster.server = `https://${HIDDEN_HOST}:${port}`;
    if (proxyUrl) c.cluster['proxy-url'] = proxyUrl;
    if (tlsServerName) c.cluster['tls-server-name'] = tlsServerName;
  }
  const file = join(mkdtempSync(join(tmpdir(), 'proxied-kc-')), 'kubeconfig');
  writeFileSync(file, stringify(kc), { mode: 0o600 });
  return file;
}

describe('proxy-url and tls-server-name, the same for watches and operations', () => {
  let proxy: Proxy;
  let client: KubeClient;

  beforeAll(async () => {
    proxy = await startProxy();
    client = await KubeClient.create({ kubeconfigFile: proxiedKubeconfig(proxy.url, 'kubernetes') });
  });
  afterAll(async () => {
    client.close();
    await proxy.close();
  });

  it('watches and operates through the CONNECT proxy, verifying TLS against tls-server-name', async () => {
    const ns = await createNamespace('proxied');
    const port = new URL(testEnv().server).port;

    // A watch (the reflector's request) through the tunnel sees the object the operation below creates.
    const watchAbort = new AbortController();
    const { stream } = await client.get(`/api/v1/namespaces/${ns}/configmaps?watch=1&allowWatchBookmarks=false`, {
      signal: watchAbort.signal,
    });
    // Read as the reflector reads a watch: by async iteration (the stream comes paused, holding what arrived).
    type WatchEvent = { type: string; object: { metadata: { name: string } } };
    const firstEvent = (async (): Promise<WatchEvent> => {
      const lines = new JsonLineSplitter();
      for await (const chunk of stream) {
        for (const line of lines.push(chunk as Buffer)) {
          // The namespace's kube-root-ca.crt comes first; wait for ours (versioned: via-proxy-v000).
          const e = JSON.parse(line.toString('utf8')) as WatchEvent;
          if (e.object.metadata.name.startsWith('via-proxy')) return e;
        }
      }
      throw new Error('the watch ended before the deployed object was seen');
    })();

    // An operation (server-side apply PATCH with a body) through the same access layer.
    const parsed = parseOperations(
      [
        {
          deployManifest: {
            account: 'proxied',
            moniker: { app: 'proxied' },
            namespaceOverride: ns,
            manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'via-proxy' }, data: { a: '1' } }],
          },
        },
      ],
      { endpoint: 'kubernetes' },
    );
    if (!parsed.ok || !parsed.operations[0]) throw new Error('the test body does not parse');
    const deployed = await executeOperation(client, parsed.operations[0]);
    expect(deployed.error, deployed.messages.join('\n')).toBeUndefined();

    const event = await firstEvent;
    watchAbort.abort();
    expect(event.type).toBe('ADDED');
    // Deployed ConfigMaps are versioned, as Clouddriver does.
    expect(event.object.metadata.name).toBe('via-proxy-v000');
    // The API server really has it (kubectl talks to it directly, not through the proxy).
    const { stdout } = await kubectl(['get', 'configmap', 'via-proxy-v000', '-n', ns, '-o', 'jsonpath={.data.a}']);
    expect(stdout).toBe('1');
    // Every connection went through the proxy, to the name only the proxy can resolve.
    expect(proxy.tunnels.length).toBeGreaterThan(0);
    expect(new Set(proxy.tunnels)).toEqual(new Set([`${HIDDEN_HOST}:${port}`]));
  });

  it('without tls-server-name the certificate does not match the name, and the request fails', async () => {
    const noName = await KubeClient.create({ kubeconfigFile: proxiedKubeconfig(proxy.url, undefined) });
    try {
      const err = (await noName.getJson('/version').catch((e: unknown) => e)) as Error & { code?: string };
      expect(err.code).toBe('SA_ERR_UNAVAILABLE');
      expect(err.message).toMatch(/altnames|certificate/i);
    } finally {
      noName.close();
    }
  });

  it('a proxy that refuses the tunnel fails the request with a message naming the proxy', async () => {
    const refusing = await startProxy({ refuse: true });
    const c = await KubeClient.create({ kubeconfigFile: proxiedKubeconfig(refusing.url, 'kubernetes') });
    try {
      const err = (await c.getJson('/version').catch((e: unknown) => e)) as Error & { code?: string };
      expect(err.code).toBe('SA_ERR_UNAVAILABLE');
      expect(err.message).toContain('refused CONNECT');
      expect(err.message).toContain('407');
      expect(refusing.tunnels).toEqual([`${HIDDEN_HOST}:${new URL(testEnv().server).port}`]);
    } finally {
      c.close();
      await refusing.close();
    }
  });
});
