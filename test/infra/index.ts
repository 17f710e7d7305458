/**
 * The test harness's public face. Integration tests share one real control plane and one MariaDB server
 * started by global-setup.ts (their coordinates arrive in environment variables) and isolate themselves by
 * namespace and database. Destructive tests start a private ControlPlane or MariaDb instead.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, type V1PolicyRule } from '@kubernetes/client-node';
import { run, type RunOptions, type RunResult } from './exec.js';
import { kubeconfigYaml } from './pki.js';
import { createDatabase } from './mariadb.js';

export { ControlPlane, type Component } from './control-plane.js';
export { MariaDb } from './mariadb.js';
export { PostgresServer, createPostgresDatabase, onPostgresDatabases, testPostgres } from './postgres.js';
export { run, type RunResult, type RunOptions } from './exec.js';
export { freePort } from './ports.js';
export { pidAlive } from './processes-group.js';
export { waitFor } from './wait.js';

export interface TestEnv {
  /** Admin kubeconfig of the shared control plane. */
  kubeconfig: string;
  /** Directory with etcd, kube-apiserver, kube-controller-manager, kubectl, helm, kustomize. */
  binDir: string;
  /** https://127.0.0.1:PORT of the shared API server. */
  server: string;
  /** mysql://root@127.0.0.1:PORT/ of the shared MariaDB server (or SCALE_AGENT_TEST_MYSQL_URL). */
  mysqlUrl: string;
}

export function testEnv(): TestEnv {
  const get = (name: string): string => {
    const v = process.env[name];
    if (!v) throw new Error(`${name} is not set: integration tests run under test/infra/global-setup.ts (npm test)`);
    return v;
  };
  return {
    kubeconfig: get('SCALE_AGENT_TEST_KUBECONFIG'),
    binDir: get('SCALE_AGENT_TEST_K8S_BIN'),
    server: get('SCALE_AGENT_TEST_K8S_SERVER'),
    mysqlUrl: get('SCALE_AGENT_TEST_MYSQL_URL'),
  };
}

// kubectl and helm keep discovery caches and config under HOME; give the test run its own.
let toolHome: string | undefined;
function toolEnv(): Record<string, string> {
  toolHome ??= mkdtempSync(join(tmpdir(), 'scale-agent-toolhome-'));
  return {
    KUBECONFIG: testEnv().kubeconfig,
    HOME: toolHome,
    HELM_CACHE_HOME: join(toolHome, 'helm-cache'),
    HELM_CONFIG_HOME: join(toolHome, 'helm-config'),
    HELM_DATA_HOME: join(toolHome, 'helm-data'),
  };
}

function tool(name: string) {
  return (args: string[], opts: RunOptions = {}): Promise<RunResult> =>
    run(join(testEnv().binDir, name), args, { ...opts, env: { ...toolEnv(), ...opts.env } });
}

/** The real kubectl, as admin of the shared control plane (pass `--kubeconfig` to act as someone else). */
export const kubectl = tool('kubectl');
export const helm = tool('helm');
export const kustomize = tool('kustomize');
/** The other real tools from tools/k8s/build.sh (same directory as kubectl). */
export const grpcurl = tool('grpcurl');
export const kubeScore = tool('kube-score');
export const helmDocs = tool('helm-docs');
export const promtool = tool('promtool');
/** Absolute path of a test binary (for tools started as servers: kwok, toxiproxy-server). */
export function toolPath(name: string): string {
  return join(testEnv().binDir, name);
}

export function adminKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(testEnv().kubeconfig);
  return kc;
}

/**
 * Creates a namespace with a unique name starting with `prefix` and returns the name, once the controller manager's
 * kube-root-ca.crt is in it.
 */
export async function createNamespace(prefix: string): Promise<string> {
  const base = prefix
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 40);
  const name = `${base}-${Math.random().toString(36).slice(2, 8)}`;
  await kubectl(['create', 'namespace', name]);
  // The controller manager adds kube-root-ca.crt to every new namespace a moment later; on a loaded machine that
  // can land after a test's first list and show up as an unexpected watch event. Returning only once it exists
  // makes a new namespace's contents the same in every run.
  await kubectl(['wait', '--for=create', 'configmap/kube-root-ca.crt', '-n', name, '--timeout=60s']);
  return name;
}

/**
 * A ServiceAccount with exactly the given rights: `rules` as a Role + RoleBinding in its namespace,
 * `clusterRules` as a ClusterRole + ClusterRoleBinding. Returns a real token (TokenRequest, 1 h) and a
 * kubeconfig file that authenticates with it, so tests check RBAC as the API server enforces it.
 */
export async function createServiceAccount(opts: {
  namespace: string;
  name: string;
  rules?: V1PolicyRule[];
  clusterRules?: V1PolicyRule[];
}): Promise<{ token: string; kubeconfigPath: string; username: string }> {
  const { namespace, name } = opts;
  const docs: object[] = [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } }];
  const subject = [{ kind: 'ServiceAccount', name, namespace }];
  if (opts.rules) {
    docs.push(
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace }, rules: opts.rules },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name, namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: subject,
      },
    );
  }
  if (opts.clusterRules) {
    const clusterName = `${namespace}-${name}`;
    docs.push(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: clusterName },
        rules: opts.clusterRules,
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: clusterName },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterName },
        subjects: subject,
      },
    );
  }
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs }) });
  const { stdout } = await kubectl(['create', 'token', name, '-n', namespace, '--duration=1h']);
  const token = stdout.trim();
  const admin = adminKubeConfig();
  const cluster = admin.getCurrentCluster();
  const caPem = cluster?.caData
    ? Buffer.from(cluster.caData, 'base64').toString()
    : readFileSync(cluster?.caFile ?? '', 'utf8');
  const kubeconfigPath = join(mkdtempSync(join(tmpdir(), 'scale-agent-sa-')), 'kubeconfig');
  writeFileSync(kubeconfigPath, kubeconfigYaml({ server: testEnv().server, caPem, token, user: name, namespace }), {
    mode: 0o600,
  });
  return { token, kubeconfigPath, username: `system:serviceaccount:${namespace}:${name}` };
}

/** A fresh database on the shared MariaDB server, for one test file. */
export function createTestDatabase(prefix: string): Promise<{ url: string; database: string; drop(): Promise<void> }> {
  return createDatabase(testEnv().mysqlUrl, prefix);
}

/**
 * A contract suite's factory (store-contract.ts, task-repository-contract.ts) for a MySQL backend: each test gets
 * `open(url)` on a fresh database of its own, closed and the database dropped after the test.
 */
export function onTestDatabases<T extends { close(): Promise<void> }>(
  prefix: string,
  open: (url: string) => T,
): { create(): Promise<T>; destroy(t: T): Promise<void> } {
  const drops = new WeakMap<T, () => Promise<void>>();
  return {
    create: async () => {
      const db = await createTestDatabase(prefix);
      const t = open(db.url);
      drops.set(t, db.drop);
      return t;
    },
    destroy: async (t) => {
      await t.close();
      await drops.get(t)?.();
    },
  };
}
