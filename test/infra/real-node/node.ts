/**
 * A real Kubernetes node on this machine, against a control plane of its own: containerd (with Debian's runc),
 * a CNI bridge, kubelet (x509 identity system:node:<name>), kube-proxy (iptables mode) and CoreDNS, so pods run
 * from locally built images, reach each other by Service name and reach the API server through the `kubernetes`
 * Service, as in a user's cluster. layout.ts says where it lives and why traffic stays on this machine; stop()
 * puts the machine back as host-state.ts saw it and reports anything it could not undo.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControlPlane } from '../control-plane.js';
import { run, type RunOptions, type RunResult } from '../exec.js';
import { resolveK8sBinDir } from '../k8s-tools.js';
import { issueCert, kubeconfigYaml } from '../pki.js';
import { ServerProcess } from '../processes-group.js';
import { waitFor } from '../wait.js';
import { cniConflist, containerdToml, kubeletConfig, kubeProxyConfig, type NodeDirs } from './configs.js';
import { corednsManifests } from './coredns.js';
import { diffHost, snapshotHost, type HostState } from './host-state.js';
import { importImages, nodeImages } from './images.js';
import {
  EGRESS_CHAIN,
  KUBE_PROXY_HEALTHZ_PORT,
  KUBELET_HEALTHZ_PORT,
  KUBERNETES_SERVICE_IP,
  NET,
  NODE_IP,
  NODE_IP_LINK,
  NODE_NAME,
  POD_CIDR,
  SERVICE_CIDR,
} from './layout.js';
import { lockMachine } from './lock.js';
import { preflight } from './preflight.js';
import { killByExecutable, killCgroupProcesses, undoHost } from './undo.js';

type NodeComponent = 'containerd' | 'kubelet' | 'kube-proxy';

export interface RealNodeOptions {
  log?: (line: string) => void;
  /** How long to wait for another run's node to finish (one node per machine). */
  lockTimeoutMs?: number;
}

export class RealNode {
  private readonly procs = new Map<NodeComponent, ServerProcess>();
  private cp: ControlPlane | undefined;
  private toolHome: string;

  private constructor(
    readonly dir: string,
    readonly dirs: NodeDirs,
    readonly before: HostState,
    private readonly unlock: () => void,
    private readonly log: (line: string) => void,
  ) {
    this.toolHome = join(dir, 'home');
  }

  get controlPlane(): ControlPlane {
    if (!this.cp) throw new Error('the real node has no control plane (stopped?)');
    return this.cp;
  }
  get kubeconfig(): string {
    return this.controlPlane.kubeconfig;
  }
  get binDir(): string {
    return this.dirs.binDir;
  }
  get name(): string {
    return NODE_NAME;
  }

  static async start(opts: RealNodeOptions = {}): Promise<RealNode> {
    const log = opts.log ?? (() => {});
    await preflight();
    const unlock = await lockMachine(opts.lockTimeoutMs ?? 30 * 60_000, log);
    let node: RealNode | undefined;
    try {
      const before = await snapshotHost();
      const dir = mkdtempSync(join(tmpdir(), 'scale-agent-node-'));
      const dirs = await prepare(dir);
      node = new RealNode(dir, dirs, before, unlock, log);
      await node.boot();
      return node;
    } catch (e) {
      if (node) {
        const left = await node.stop().catch((err: Error) => [err.message]);
        if (left.length) log(`after a failed start, the machine differs: ${left.join('; ')}`);
      } else {
        unlock();
      }
      throw e;
    }
  }

  private async boot(): Promise<void> {
    const t0 = Date.now();
    const since = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
    await this.networkUp();
    this.cp = await ControlPlane.start({
      dir: join(this.dir, 'cp'),
      binDir: this.dirs.binDir,
      log: this.log,
      node: { address: NODE_IP, serviceCidr: SERVICE_CIDR, kubernetesServiceIp: KUBERNETES_SERVICE_IP },
    });
    await this.writeNodeFiles(this.cp);
    this.log(`control plane ready (${since()})`);
    this.startProc('containerd', join(this.dirs.binDir, 'containerd'), ['--config', join(this.dir, 'containerd.toml')]);
    await waitFor('containerd', async () => (await this.ctr(['version'], { allowFail: true })).code === 0, 30_000);
    await importImages({ ...this.dirs, dir: this.dir }, nodeImages(this.dirs.binDir));
    this.log(`containerd ready, images imported (${since()})`);
    this.startProc('kubelet', join(this.dirs.binDir, 'kubelet'), [
      `--config=${join(this.dir, 'kubelet.json')}`,
      `--kubeconfig=${this.dirs.kubeletKubeconfig}`,
      `--root-dir=${join(this.dir, 'kubelet')}`,
      `--cert-dir=${join(this.dir, 'kubelet-pki')}`,
      `--node-ip=${NODE_IP}`,
      `--hostname-override=${NODE_NAME}`,
    ]);
    await this.waitHealthz('kubelet', KUBELET_HEALTHZ_PORT);
    await waitFor('node Ready', () => this.nodeReady(), 120_000);
    this.log(`node ${NODE_NAME} Ready (${since()})`);
    this.startProc('kube-proxy', join(this.dirs.binDir, 'kube-proxy'), [
      `--config=${join(this.dir, 'kube-proxy.json')}`,
    ]);
    await this.waitHealthz('kube-proxy', KUBE_PROXY_HEALTHZ_PORT);
    await this.kubectl(['apply', '-f', '-'], { input: JSON.stringify(corednsManifests()) });
    await this.kubectl(['-n', 'kube-system', 'rollout', 'status', 'deployment/coredns', '--timeout=120s'], {
      timeoutMs: 130_000,
    });
    this.log(`kube-proxy and CoreDNS ready (${since()})`);
  }

  /**
   * The node's address on the loopback link; the Service range routed to the loopback link too, where a ClusterIP
   * kube-proxy has not translated dies instead of following the default route off the machine (a blackhole route
   * would also fail this machine's own connections to ClusterIPs: their route is looked up before kube-proxy's
   * DNAT); pods' traffic to anywhere outside NET rejected.
   */
  private async networkUp(): Promise<void> {
    await run('ip', ['addr', 'add', `${NODE_IP}/32`, 'dev', NODE_IP_LINK]);
    await run('ip', ['route', 'add', SERVICE_CIDR, 'dev', NODE_IP_LINK]);
    await run('iptables', ['-N', EGRESS_CHAIN]);
    await run('iptables', ['-A', EGRESS_CHAIN, '-s', POD_CIDR, '!', '-d', NET, '-j', 'REJECT']);
    await run('iptables', ['-I', 'FORWARD', '-j', EGRESS_CHAIN]);
  }

  private async writeNodeFiles(cp: ControlPlane): Promise<void> {
    const caPem = readFileSync(cp.pki.caCert, 'utf8');
    const kubelet = await issueCert(cp.pki, 'kubelet-client', `/O=system:nodes/CN=system:node:${NODE_NAME}`, [
      'extendedKeyUsage=clientAuth',
    ]);
    const serving = await issueCert(cp.pki, 'kubelet-serving', `/O=system:nodes/CN=system:node:${NODE_NAME}`, [
      'extendedKeyUsage=serverAuth',
      `subjectAltName=IP:${NODE_IP},DNS:${NODE_NAME}`,
    ]);
    // system:kube-proxy is bound to the system:node-proxier role by the API server's default policy.
    const proxy = await issueCert(cp.pki, 'kube-proxy', '/CN=system:kube-proxy', ['extendedKeyUsage=clientAuth']);
    const d = this.dirs;
    const write = (f: string, text: string) => writeFileSync(f, text, { mode: 0o600 });
    write(d.kubeletKubeconfig, kubeconfigYaml({ server: cp.server, caPem, clientCert: kubelet, user: 'kubelet' }));
    write(d.kubeProxyKubeconfig, kubeconfigYaml({ server: cp.server, caPem, clientCert: proxy, user: 'kube-proxy' }));
    Object.assign(d, { caCert: cp.pki.caCert, kubeletCert: serving.cert, kubeletKey: serving.key });
    write(join(this.dir, 'containerd.toml'), containerdToml(d));
    write(join(d.cniConfDir, '10-scale-agent-node.conflist'), cniConflist(d));
    write(join(this.dir, 'kubelet.json'), kubeletConfig(d));
    write(join(this.dir, 'kube-proxy.json'), kubeProxyConfig(d));
  }

  private startProc(c: NodeComponent, cmd: string, args: string[]): void {
    // containerd finds its shim, and kubelet and kube-proxy find iptables and mount, on PATH.
    const env = { ...process.env, PATH: `${this.dirs.binDir}:/usr/sbin:/sbin:${process.env.PATH ?? ''}` };
    this.procs.set(c, ServerProcess.start(c, cmd, args, join(this.dir, `${c}.log`), env));
  }

  private async waitHealthz(c: NodeComponent, port: number): Promise<void> {
    await waitFor(
      `${c} healthz`,
      async () => {
        this.procs.get(c)?.assertRunning();
        return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
      },
      120_000,
    );
  }

  private async nodeReady(): Promise<boolean> {
    this.procs.get('kubelet')?.assertRunning();
    const res = await this.controlPlane.apiGet(`/api/v1/nodes/${NODE_NAME}`);
    if (res.status !== 200) return false;
    const node = JSON.parse(res.body) as { status?: { conditions?: { type: string; status: string }[] } };
    return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  }

  ctr(args: string[], opts: RunOptions = {}): Promise<RunResult> {
    return run(join(this.dirs.binDir, 'ctr'), ['--address', this.dirs.containerdSocket, ...args], opts);
  }

  /** The real kubectl as the node's cluster admin. */
  kubectl(args: string[], opts: RunOptions = {}): Promise<RunResult> {
    return run(join(this.dirs.binDir, 'kubectl'), args, {
      ...opts,
      env: { KUBECONFIG: this.kubeconfig, HOME: this.toolHome, ...opts.env },
    });
  }

  /** The log tail of a node component, for failure messages. */
  logTail(c: NodeComponent, lines = 40): string {
    return this.procs.get(c)?.logTail(lines) ?? '(not started)';
  }

  /**
   * Stops everything and undoes what the node changed on this machine; returns the differences from the state
   * before the node started that remain (empty when the machine is as it was).
   */
  async stop(): Promise<string[]> {
    const problems: string[] = [];
    try {
      // Pods first, while kubelet runs: it stops their containers and tears down their networks through CNI.
      if (this.cp?.procs.get('kube-apiserver')?.running && this.procs.get('kubelet')?.running) {
        // Cordoned first, so the pods the controllers make to replace the deleted ones stay Pending.
        await this.kubectl(['cordon', NODE_NAME], { allowFail: true });
        const all = ['--all', '--all-namespaces', '--grace-period=0', '--force', '--wait=false'];
        await this.kubectl(['delete', 'pods', ...all], { allowFail: true });
        await waitFor(
          'containers stopped',
          async () => !/\bRUNNING\b/.test((await this.ctr(['-n', 'k8s.io', 'tasks', 'ls'])).stdout),
          60_000,
        ).catch((e: Error) => problems.push(e.message));
      }
      for (const c of ['kube-proxy', 'kubelet'] as const) await this.procs.get(c)?.stop();
      killCgroupProcesses(this.before);
      await this.procs.get('containerd')?.stop();
      killByExecutable([join(this.dirs.binDir, 'containerd-shim-runc-v2')]);
      // Shims and containers exit asynchronously to the kill; the cgroups and mounts can go only after them.
      await sleep(500);
      await this.cp?.stop();
      this.cp = undefined;
      problems.push(...(await undoHost(this.before, this.dir)));
      rmSync(this.dir, { recursive: true, force: true });
      problems.push(...diffHost(this.before, await snapshotHost()));
    } finally {
      this.unlock();
    }
    return problems;
  }
}

/** The node's private directories and the binaries it runs. */
async function prepare(dir: string): Promise<NodeDirs> {
  const binDir = await resolveK8sBinDir();
  const runc = (await run('sh', ['-c', 'command -v runc'])).stdout.trim();
  const d: NodeDirs = {
    dir,
    binDir,
    runc,
    containerdSocket: join(dir, 'containerd.sock'),
    cniConfDir: join(dir, 'cni'),
    caCert: '',
    kubeletCert: '',
    kubeletKey: '',
    kubeletKubeconfig: join(dir, 'kubelet.kubeconfig'),
    kubeProxyKubeconfig: join(dir, 'kube-proxy.kubeconfig'),
    resolvConf: join(dir, 'resolv.conf'),
  };
  for (const sub of ['cni', 'home', 'pod-logs', 'cni-ipam']) mkdirSync(join(dir, sub), { recursive: true });
  // Pods with dnsPolicy Default (CoreDNS) get this file: no upstream resolver, so no query leaves the machine.
  writeFileSync(d.resolvConf, '# scale-agent test node: no upstream DNS\n');
  return d;
}
