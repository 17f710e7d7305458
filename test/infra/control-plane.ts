import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPki, issueCert, kubeconfigYaml, type ControlPlanePki } from './pki.js';
import { freePort } from './ports.js';
import { ServerProcess } from './processes-group.js';
import { resolveK8sBinDir } from './k8s-tools.js';

export type Component = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler';

/**
 * A control plane for a real node (test/infra/real-node): the API server listens on the node's address too, so
 * pods reach it through the `kubernetes` Service, authorizes kubelets with the Node authorizer, and reaches them
 * with a client certificate; a scheduler runs.
 */
export interface NodeControlPlane {
  /** The node's private address (a dummy link on this machine); the API server binds and advertises it. */
  address: string;
  serviceCidr: string;
  /** The `kubernetes` Service's ClusterIP (first address of serviceCidr), a SAN of the serving certificate. */
  kubernetesServiceIp: string;
}

const START_TIMEOUT_MS = 120_000; // 2 cores shared with a test run: apiserver start is 5-20 s, leave room.

/**
 * A real Kubernetes control plane on loopback: etcd + kube-apiserver (RBAC, ServiceAccount token signing,
 * a static admin token) + kube-controller-manager (ReplicaSets, garbage collection, namespace deletion,
 * default ServiceAccounts). Everything lives in one temp dir and runs on free ports.
 */
export class ControlPlane {
  readonly procs = new Map<Component, ServerProcess>();
  private constructor(
    readonly dir: string,
    readonly binDir: string,
    readonly pki: ControlPlanePki,
    readonly etcdPort: number,
    readonly etcdPeerPort: number,
    readonly apiPort: number,
    readonly ownsDir: boolean,
    readonly node: NodeControlPlane | undefined,
    readonly schedulerPort: number,
  ) {}

  get server(): string {
    return `https://${this.node?.address ?? '127.0.0.1'}:${this.apiPort}`;
  }
  get etcdUrl(): string {
    return `http://127.0.0.1:${this.etcdPort}`;
  }
  /** Admin kubeconfig (static token in system:masters). */
  get kubeconfig(): string {
    return join(this.dir, 'kubeconfig');
  }
  get adminToken(): string {
    return this.pki.adminToken;
  }
  get caFile(): string {
    return this.pki.caCert;
  }
  /** Pids of the running components (for leak checks). */
  pids(): number[] {
    return [...this.procs.values()].filter((p) => p.running).map((p) => p.pid);
  }

  static async start(
    opts: { dir?: string; binDir?: string; log?: (line: string) => void; node?: NodeControlPlane } = {},
  ): Promise<ControlPlane> {
    const ownsDir = !opts.dir;
    const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'scale-agent-cp-'));
    mkdirSync(dir, { recursive: true });
    const binDir = opts.binDir ?? (await resolveK8sBinDir());
    const node = opts.node;
    const pki = await createPki(join(dir, 'pki'), node ? { ips: [node.address, node.kubernetesServiceIp] } : {});
    if (node) {
      await issueCert(pki, 'apiserver-kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', [
        'extendedKeyUsage=clientAuth',
      ]);
    }
    const ports = [await freePort(), await freePort(), await freePort(), node ? await freePort() : 0] as const;
    const cp = new ControlPlane(dir, binDir, pki, ports[0], ports[1], ports[2], ownsDir, node, ports[3]);
    writeFileSync(
      cp.kubeconfig,
      kubeconfigYaml({
        server: cp.server,
        caPem: readFileSync(pki.caCert, 'utf8'),
        token: pki.adminToken,
        user: 'admin',
      }),
      { mode: 0o600 },
    );
    const log = opts.log ?? (() => {});
    try {
      const t0 = Date.now();
      await cp.startComponent('etcd');
      log(`etcd ready on ${cp.etcdUrl} (${Date.now() - t0} ms)`);
      await cp.startComponent('kube-apiserver');
      log(`kube-apiserver ready on ${cp.server} (${Date.now() - t0} ms)`);
      await cp.startComponent('kube-controller-manager');
      log(`kube-controller-manager ready (${Date.now() - t0} ms)`);
      if (node) {
        await cp.startComponent('kube-scheduler');
        log(`kube-scheduler ready (${Date.now() - t0} ms)`);
      }
    } catch (e) {
      await cp.stop();
      throw e;
    }
    return cp;
  }

  private args(c: Component): string[] {
    const d = this.dir;
    const p = this.pki;
    switch (c) {
      case 'etcd':
        return [
          '--name=test',
          `--data-dir=${join(d, 'etcd')}`,
          `--listen-client-urls=${this.etcdUrl}`,
          `--advertise-client-urls=${this.etcdUrl}`,
          `--listen-peer-urls=http://127.0.0.1:${this.etcdPeerPort}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${this.etcdPeerPort}`,
          `--initial-cluster=test=http://127.0.0.1:${this.etcdPeerPort}`,
          '--unsafe-no-fsync=true',
          '--log-level=warn',
        ];
      case 'kube-apiserver':
        return [
          `--etcd-servers=${this.etcdUrl}`,
          // The node's address is private to this machine (a dummy link), like loopback but reachable from pods.
          `--bind-address=${this.node?.address ?? '127.0.0.1'}`,
          // Without it the apiserver looks for a default route's address and dies on machines without one.
          `--advertise-address=${this.node?.address ?? '127.0.0.1'}`,
          `--secure-port=${this.apiPort}`,
          `--cert-dir=${join(d, 'apiserver')}`,
          `--tls-cert-file=${p.apiserverCert}`,
          `--tls-private-key-file=${p.apiserverKey}`,
          `--client-ca-file=${p.caCert}`,
          `--token-auth-file=${p.tokensCsv}`,
          ...(this.node ? this.nodeApiserverArgs() : ['--authorization-mode=RBAC']),
          '--allow-privileged=true',
          `--service-cluster-ip-range=${this.node?.serviceCidr ?? '10.0.0.0/24'}`,
          '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
          `--service-account-key-file=${p.saPub}`,
          `--service-account-signing-key-file=${p.saKey}`,
          '--profiling=false',
        ];
      case 'kube-controller-manager':
        return [
          `--kubeconfig=${this.kubeconfig}`,
          '--leader-elect=false',
          '--secure-port=0',
          `--root-ca-file=${p.caCert}`,
          `--service-account-private-key-file=${p.saKey}`,
          '--use-service-account-credentials=false',
          '--controllers=*',
          '--concurrent-gc-syncs=5',
        ];
      case 'kube-scheduler':
        return [
          `--kubeconfig=${this.kubeconfig}`,
          '--leader-elect=false',
          '--bind-address=127.0.0.1',
          `--secure-port=${this.schedulerPort}`,
        ];
    }
  }

  private nodeApiserverArgs(): string[] {
    const p = (f: string) => join(this.pki.dir, f);
    return [
      // Kubelets act only on their own node and its pods (x509 identity system:node:<name>).
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      // The node's hostname is not resolvable here; its InternalIP is the dummy link's address.
      '--kubelet-preferred-address-types=InternalIP',
      `--kubelet-client-certificate=${p('apiserver-kubelet-client.crt')}`,
      `--kubelet-client-key=${p('apiserver-kubelet-client.key')}`,
      `--kubelet-certificate-authority=${this.pki.caCert}`,
    ];
  }

  /** Starts (or restarts after `kill`) one component and waits until it is ready. */
  async startComponent(c: Component): Promise<void> {
    const existing = this.procs.get(c);
    if (existing?.running) throw new Error(`${c} is already running`);
    const proc = ServerProcess.start(c, join(this.binDir, c), this.args(c), join(this.dir, `${c}.log`));
    this.procs.set(c, proc);
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      proc.assertRunning();
      if (await this.isReady(c)) return;
      if (Date.now() > deadline) {
        throw new Error(`${c} not ready after ${START_TIMEOUT_MS / 1000} s; last log lines:\n${proc.logTail()}`);
      }
      await sleep(200);
    }
  }

  /** SIGKILL one component (fault injection); `startComponent` brings it back on the same port and data. */
  async kill(c: Component): Promise<void> {
    await this.procs.get(c)?.kill();
  }

  async restart(c: Component): Promise<void> {
    await this.procs.get(c)?.stop();
    await this.startComponent(c);
  }

  private async isReady(c: Component): Promise<boolean> {
    try {
      switch (c) {
        case 'etcd': {
          const res = await fetch(`${this.etcdUrl}/health`);
          return res.ok && ((await res.json()) as { health?: string }).health === 'true';
        }
        case 'kube-apiserver':
          // /readyz includes the RBAC bootstrap-roles hook, so default roles exist once it passes.
          return (await this.apiGet('/readyz')).status === 200;
        case 'kube-controller-manager': {
          // The serviceaccount controller creating "default" in "default" shows the controllers are running.
          return (await this.apiGet('/api/v1/namespaces/default/serviceaccounts/default')).status === 200;
        }
        case 'kube-scheduler':
          return (await httpsGet(`https://127.0.0.1:${this.schedulerPort}/healthz`, {})).status === 200;
      }
    } catch {
      return false;
    }
  }

  /** GET against the API server as admin; for harness checks (tests use kubectl or client-node). */
  apiGet(path: string): Promise<{ status: number; body: string }> {
    return httpsGet(`${this.server}${path}`, {
      ca: readFileSync(this.pki.caCert),
      headers: { authorization: `Bearer ${this.pki.adminToken}` },
    });
  }

  /** Stops every component (controller manager first, etcd last) and removes the temp dir it created. */
  async stop(): Promise<void> {
    for (const c of ['kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd'] as const) {
      await this.procs.get(c)?.stop();
    }
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** GET over HTTPS; without `ca` the server's certificate is not checked (the scheduler's self-signed healthz). */
function httpsGet(
  url: string,
  opts: { ca?: Buffer; headers?: Record<string, string> },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { ca: opts.ca, rejectUnauthorized: !!opts.ca, headers: opts.headers, timeout: 5_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}
