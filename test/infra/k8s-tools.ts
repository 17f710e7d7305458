import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from './exec.js';

export const K8S_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl', 'helm', 'kustomize'];

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The directory holding the test binaries: SCALE_AGENT_TEST_K8S_BIN when the global setup already resolved
 * it, otherwise whatever tools/k8s/build.sh prints (it honours KUBEBUILDER_ASSETS and builds only what is
 * missing; a warm cache answers in well under a second).
 */
export async function resolveK8sBinDir(): Promise<string> {
  const fromEnv = process.env.SCALE_AGENT_TEST_K8S_BIN;
  if (fromEnv && K8S_BINARIES.every((b) => existsSync(join(fromEnv, b)))) return fromEnv;
  const { stdout } = await run('bash', [join(repoRoot, 'tools/k8s/build.sh')], { timeoutMs: 90 * 60_000 });
  const dir = stdout.trim().split('\n').pop() ?? '';
  const missing = K8S_BINARIES.filter((b) => !existsSync(join(dir, b)));
  if (missing.length) throw new Error(`tools/k8s/build.sh printed ${dir}, which lacks ${missing.join(', ')}`);
  return dir;
}
