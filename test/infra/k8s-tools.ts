import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from './exec.js';

export const K8S_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl', 'helm', 'kustomize'];
/** The other real tools tools/k8s/build.sh builds into the same directory. */
export const EXTRA_TOOLS = [
  'kwok',
  'toxiproxy-server',
  'toxiproxy-cli',
  'grpcurl',
  'kube-score',
  'helm-docs',
  'promtool',
];
/** The parts of a real node (test/infra/real-node) and the image tool that makes its images. */
export const NODE_TOOLS = [
  'kubelet',
  'kube-scheduler',
  'kube-proxy',
  'containerd',
  'containerd-shim-runc-v2',
  'ctr',
  'bridge',
  'host-local',
  'loopback',
  'portmap',
  'coredns',
  'node-images',
];
export const ALL_TOOLS = [...K8S_BINARIES, ...EXTRA_TOOLS, ...NODE_TOOLS];

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The directory holding the test binaries: SCALE_AGENT_TEST_K8S_BIN when the global setup already resolved
 * it, otherwise whatever tools/k8s/build.sh prints (it honours KUBEBUILDER_ASSETS and builds only what is
 * missing; a warm cache answers in well under a second).
 */
export async function resolveK8sBinDir(): Promise<string> {
  const fromEnv = process.env.SCALE_AGENT_TEST_K8S_BIN;
  if (fromEnv && ALL_TOOLS.every((b) => existsSync(join(fromEnv, b)))) return fromEnv;
  const { stdout } = await run('bash', [join(repoRoot, 'tools/k8s/build.sh')], { timeoutMs: 90 * 60_000 });
  const dir = stdout.trim().split('\n').pop() ?? '';
  const missing = ALL_TOOLS.filter((b) => !existsSync(join(dir, b)));
  if (missing.length) throw new Error(`tools/k8s/build.sh printed ${dir}, which lacks ${missing.join(', ')}`);
  return dir;
}
