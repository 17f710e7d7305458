/**
 * `scale-agent kubeconfig` against the real control plane, as a real CLI process: it applies an account's
 * ServiceAccount and RBAC, mints a token, and writes a kubeconfig. Then, acting with the MINTED kubeconfig, kubectl
 * shows the account can do exactly what its rules in the topology say (every verb of every rule, `auth can-i --list`)
 * and nothing outside them, and `kubectl get` really works. A caller without the rights to create RoleBindings gets
 * the missing permission named and the cluster is left unchanged.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { accountRules, loadTopology, type Account, type Topology } from '../../../src/compiler/index.js';
import { adminKubeConfig, createNamespace, createServiceAccount, kubectl, run, testEnv } from '../../infra/index.js';
import { cliCommand } from '../../infra/processes.js';

const suffix = Math.random().toString(36).slice(2, 7);
const team = `team-${suffix}`;
const ro = `ro-${suffix}`;
const denied = `denied-${suffix}`;
const ghost = `ghost-${suffix}`;
const edge = `edge-${suffix}`;

let work: string;
let file: string;
let topology: Topology;
let ns: { cp: string; a: string; b: string; other: string; sa: string; deniedSa: string };

function cli(args: string[]) {
  const c = cliCommand(['kubeconfig', file, ...args]);
  return run(c.cmd, c.args, { allowFail: true, env: { KUBECONFIG: testEnv().kubeconfig } });
}

const account = (name: string): Account =>
  topology.agents.flatMap((a) => a.accounts).find((acc) => acc.name === name) as Account;

/** `kubectl auth can-i --list` as the kubeconfig's user: resource → verbs allowed (no resourceNames restriction). */
async function allowed(kubeconfig: string, namespace: string): Promise<Map<string, Set<string>>> {
  const r = await kubectl(['auth', 'can-i', '--list', '-n', namespace, '--kubeconfig', kubeconfig]);
  const out = new Map<string, Set<string>>();
  for (const line of r.stdout.split('\n').slice(1)) {
    const m = /^(\S+)\s+\[[^\]]*\]\s+\[([^\]]*)\]\s+\[([^\]]*)\]\s*$/.exec(line);
    if (!m || m[2] !== '') continue;
    const verbs = out.get(m[1]!) ?? new Set<string>();
    for (const v of m[3]!.split(' ')) if (v) verbs.add(v);
    out.set(m[1]!, verbs);
  }
  return out;
}

/** Every (resource, verb) the rules grant, as `can-i --list` names resources ("deployments.apps/scale", "pods/log"). */
function granted(rules: readonly { apiGroups: string[]; resources: string[]; verbs: string[] }[]): [string, string][] {
  const name = (group: string, resource: string): string => {
    const [res, sub] = resource.split('/');
    return `${res}${group ? `.${group}` : ''}${sub ? `/${sub}` : ''}`;
  };
  return rules.flatMap((r) =>
    r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v): [string, string] => [name(g, res), v]))),
  );
}

async function can(kubeconfig: string, verb: string, resource: string, namespace?: string): Promise<boolean> {
  const where = namespace ? ['-n', namespace] : [];
  const r = await kubectl(['auth', 'can-i', verb, resource, ...where, '--kubeconfig', kubeconfig], { allowFail: true });
  return r.stdout.trim() === 'yes';
}

function jwtClaims(token: string): { exp?: number; iat?: number; sub?: string } {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as never;
}

async function exists(args: string[]): Promise<boolean> {
  return (await kubectl(['get', ...args, '-o', 'name'], { allowFail: true })).code === 0;
}

beforeAll(async () => {
  ns = {
    cp: await createNamespace('kc-cp'),
    a: await createNamespace('kc-a'),
    b: await createNamespace('kc-b'),
    other: await createNamespace('kc-other'),
    sa: `kc-sa-${suffix}`,
    deniedSa: `kc-denied-${suffix}`,
  };
  work = await mkdtemp(join(tmpdir(), 'scale-agent-kubeconfig-'));
  file = join(work, 'topology.yaml');
  await writeFile(
    file,
    `
apiVersion: scale-agent.io/v1alpha1
kind: Topology
metadata: { name: kc-${suffix} }
pluginServer:
  namespace: ${ns.cp}
  grpc: { exposure: { type: LoadBalancer, address: grpc.kc.example } }
agents:
  - name: core-${suffix}
    mode: service
    accounts:
      - name: ${team}
        kubeconfigSecret: { name: kubeconfigs, key: team }
        context: team-context
        namespaces: [${ns.a}, ${ns.b}]
        rbac: { serviceAccountNamespace: ${ns.sa} }
      - name: ${ro}
        kubeconfigSecret: { name: kubeconfigs, key: ro }
        access: read-only
        rbac: { serviceAccountNamespace: ${ns.sa} }
      - name: ${denied}
        kubeconfigSecret: { name: kubeconfigs, key: denied }
        namespaces: [${ns.a}]
        rbac: { serviceAccountNamespace: ${ns.deniedSa} }
      - name: ${ghost}
        kubeconfigSecret: { name: kubeconfigs, key: ghost }
        namespaces: [kc-missing-${suffix}]
        rbac: { serviceAccountNamespace: ${ns.deniedSa} }
  - name: ${edge}
    mode: agent
    accounts:
      - name: ${edge}
        serviceAccount: true
`,
  );
  ({ topology } = await loadTopology(file));
});

afterAll(async () => {
  await kubectl(
    ['delete', 'clusterrole,clusterrolebinding', `scale-agent-account-${ro}`, '--ignore-not-found', '--wait=false'],
    { allowFail: true },
  );
  for (const n of [ns.sa, ns.deniedSa, ns.cp, ns.a, ns.b, ns.other]) {
    await kubectl(['delete', 'namespace', n, '--ignore-not-found', '--wait=false'], { allowFail: true });
  }
  await rm(work, { recursive: true, force: true });
});

describe('scale-agent kubeconfig --duration (TokenRequest)', () => {
  let minted: string;
  let result: { token: { kind: string; expiresAt: string }; secret: { file: string; apply: string } };

  beforeAll(async () => {
    minted = join(work, 'team.kubeconfig');
    const r = await cli(['--account', team, '--duration', '2h', '--out', minted, '--json']);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    result = JSON.parse(r.stdout) as typeof result;
  });

  it('writes a kubeconfig whose context is the one the topology selects, with a token lasting exactly 2h', async () => {
    const kc = parse(await readFile(minted, 'utf8')) as {
      'current-context': string;
      users: { user: { token: string } }[];
      clusters: { cluster: { server: string } }[];
    };
    expect(kc['current-context']).toBe('team-context');
    expect(kc.clusters[0]?.cluster.server).toBe(testEnv().server);
    const claims = jwtClaims(kc.users[0]?.user.token ?? '');
    expect(claims.sub).toBe(`system:serviceaccount:${ns.sa}:scale-agent-${team}`);
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(7200);
    expect(result.token.kind).toBe('TokenRequest');
    // No long-lived token Secret is left behind by a TokenRequest run.
    expect(await exists(['secret', `scale-agent-${team}-token`, '-n', ns.sa])).toBe(false);
  });

  it('the minted kubeconfig may do every verb of every rule the topology gives the account, in each namespace', async () => {
    const expected = granted(accountRules(account(team)).rules);
    expect(expected.length).toBeGreaterThan(20);
    for (const n of [ns.a, ns.b]) {
      const list = await allowed(minted, n);
      const missing = expected.filter(([res, verb]) => !list.get(res)?.has(verb) && !list.get(res)?.has('*'));
      expect(missing, `in ${n}`).toEqual([]);
    }
  });

  it('and nothing outside them', async () => {
    expect(await can(minted, 'get', 'secrets', ns.a)).toBe(true);
    expect(await can(minted, 'get', 'secrets', ns.other)).toBe(false);
    expect(await can(minted, 'list', 'pods', ns.other)).toBe(false);
    expect(await can(minted, 'create', 'deployments.apps', ns.other)).toBe(false);
    expect(await can(minted, 'delete', 'namespaces')).toBe(false);
    expect(await can(minted, 'list', 'namespaces')).toBe(false);
    expect(await can(minted, 'create', 'rolebindings.rbac.authorization.k8s.io', ns.a)).toBe(false);
    expect(await can(minted, 'create', 'serviceaccounts/token', ns.sa)).toBe(false);
  });

  it('kubectl get works with it where the account reaches, and is refused elsewhere', async () => {
    await kubectl(['create', 'configmap', 'probe', '-n', ns.a, '--from-literal=k=v']);
    const ok = await kubectl(['get', 'configmaps', '-n', ns.a, '-o', 'name', '--kubeconfig', minted], {
      allowFail: true,
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('configmap/probe');
    const refused = await kubectl(['get', 'configmaps', '-n', ns.other, '--kubeconfig', minted], { allowFail: true });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('forbidden');
  });

  it('writes the Secret the agent group mounts: its name, the agent namespace and the key from the topology', async () => {
    const s = parse(await readFile(result.secret.file, 'utf8')) as {
      metadata: { name: string; namespace: string };
      data: Record<string, string>;
    };
    expect(s.metadata).toEqual({ name: 'kubeconfigs', namespace: ns.cp });
    expect(Object.keys(s.data)).toEqual(['team']);
    expect(Buffer.from(s.data.team ?? '', 'base64').toString()).toBe(await readFile(minted, 'utf8'));
  });
});

describe('scale-agent kubeconfig --long-lived (token Secret)', () => {
  let minted: string;
  let result: { token: { kind: string; secret: string }; secret: { file: string; apply: string } };

  beforeAll(async () => {
    minted = join(work, 'ro.kubeconfig');
    const r = await cli(['--account', ro, '--long-lived', '--out', minted, '--json']);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    result = JSON.parse(r.stdout) as typeof result;
  });

  it("uses the ServiceAccount's token Secret, whose token does not expire", async () => {
    expect(result.token).toEqual({ kind: 'Secret', secret: `scale-agent-${ro}-token` });
    const secret = JSON.parse(
      (await kubectl(['get', 'secret', `scale-agent-${ro}-token`, '-n', ns.sa, '-o', 'json'])).stdout,
    ) as { type: string; data: { token: string } };
    expect(secret.type).toBe('kubernetes.io/service-account-token');
    const kc = parse(await readFile(minted, 'utf8')) as { users: { user: { token: string } }[] };
    const token = kc.users[0]?.user.token ?? '';
    expect(token).toBe(Buffer.from(secret.data.token, 'base64').toString());
    expect(jwtClaims(token).exp).toBeUndefined();
  });

  it('the read-only cluster-wide account may read what its rules say anywhere, and write nothing', async () => {
    const rules = accountRules(account(ro));
    const list = await allowed(minted, ns.other);
    const expected = granted([...rules.rules, ...rules.clusterRules]);
    expect(expected.filter(([res, verb]) => !list.get(res)?.has(verb))).toEqual([]);
    expect(await can(minted, 'list', 'secrets', ns.other)).toBe(true);
    expect(await can(minted, 'get', 'secrets', ns.other)).toBe(false);
    expect(await can(minted, 'create', 'deployments.apps', ns.a)).toBe(false);
    expect(await can(minted, 'delete', 'namespaces')).toBe(false);
    expect(await can(minted, 'list', 'nodes')).toBe(false);
    const r = await kubectl(['get', 'namespaces', '-o', 'name', '--kubeconfig', minted], { allowFail: true });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`namespace/${ns.a}`);
  });

  it('the printed apply command puts both accounts into one Secret without either overwriting the other', async () => {
    const [cmd, ...args] = result.secret.apply.split(' ');
    expect(cmd).toBe('kubectl');
    await kubectl(args);
    const teamSecret = join(work, 'team.kubeconfig.secret.yaml');
    await kubectl(['apply', '--server-side', `--field-manager=scale-agent-kubeconfig-${team}`, '-f', teamSecret]);
    const s = JSON.parse((await kubectl(['get', 'secret', 'kubeconfigs', '-n', ns.cp, '-o', 'json'])).stdout) as {
      data: Record<string, string>;
    };
    expect(Object.keys(s.data).sort()).toEqual(['ro', 'team']);
    expect(Buffer.from(s.data.ro ?? '', 'base64').toString()).toBe(await readFile(minted, 'utf8'));
  });
});

describe('scale-agent kubeconfig with an admin kubeconfig that carries no CA', () => {
  it("writes the cluster's CA from kube-root-ca.crt, so the minted kubeconfig verifies the API server", async () => {
    const admin = parse(await readFile(testEnv().kubeconfig, 'utf8')) as {
      clusters: { cluster: Record<string, unknown> }[];
    };
    for (const c of admin.clusters) {
      delete c.cluster['certificate-authority-data'];
      delete c.cluster['certificate-authority'];
      c.cluster['insecure-skip-tls-verify'] = true;
    }
    const insecure = join(work, 'insecure-admin.kubeconfig');
    await writeFile(insecure, stringify(admin));
    const out = join(work, 'team-again.kubeconfig');
    // A second run for an account already applied: the same objects again, a new token.
    const r = await cli(['--account', team, '--kubeconfig', insecure, '--duration', '1h', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^token: TokenRequest, expires \S+Z; mint again before then$/m);
    expect(r.stdout).toContain(
      `apply it in the agent's cluster: kubectl apply --server-side --field-manager=scale-agent-kubeconfig-${team} ` +
        `-f ${out}.secret.yaml`,
    );
    const cluster = adminKubeConfig().getCurrentCluster();
    const caPem = cluster?.caData
      ? Buffer.from(cluster.caData, 'base64').toString()
      : await readFile(cluster?.caFile ?? '', 'utf8');
    const minted = parse(await readFile(out, 'utf8')) as {
      clusters: { cluster: { 'certificate-authority-data': string; 'insecure-skip-tls-verify'?: boolean } }[];
    };
    expect(minted.clusters[0]?.cluster['insecure-skip-tls-verify']).toBeUndefined();
    expect(
      Buffer.from(minted.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64')
        .toString()
        .trim(),
    ).toBe(caPem.trim());
    const get = await kubectl(['get', 'configmaps', '-n', ns.a, '-o', 'name', '--kubeconfig', out], {
      allowFail: true,
    });
    expect(get.code, get.stderr).toBe(0);
  });
});

describe('scale-agent kubeconfig refuses clearly', () => {
  it('a caller who cannot create RoleBindings: the missing permission named, nothing changed', async () => {
    const caller = await createServiceAccount({
      namespace: ns.other,
      name: 'no-bindings',
      clusterRules: [
        { apiGroups: [''], resources: ['namespaces', 'serviceaccounts', 'secrets'], verbs: ['create', 'patch', 'get'] },
        { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
        { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'], verbs: ['create', 'patch'] },
      ],
    });
    const out = join(work, 'denied.kubeconfig');
    const r = await cli(['--account', denied, '--kubeconfig', caller.kubeconfigPath, '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`system:serviceaccount:${ns.other}:no-bindings`);
    expect(r.stderr).toContain(
      `cannot create rolebindings.rbac.authorization.k8s.io "scale-agent-account-${denied}" in namespace "${ns.a}"`,
    );
    expect(r.stderr).toContain('nothing was changed');
    // Only what it lacks is named.
    expect(r.stderr).not.toContain('cannot create serviceaccounts');
    expect(await exists(['namespace', ns.deniedSa])).toBe(false);
    expect(await exists(['role', `scale-agent-account-${denied}`, '-n', ns.a])).toBe(false);
    expect(existsSync(out)).toBe(false);
  });

  it('a caller who may create RBAC objects but does not hold the rights they grant: refused before any change', async () => {
    const caller = await createServiceAccount({
      namespace: ns.other,
      name: 'no-escalate',
      clusterRules: [
        { apiGroups: [''], resources: ['namespaces', 'serviceaccounts'], verbs: ['create', 'patch', 'get'] },
        { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
        { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles', 'rolebindings'], verbs: ['create', 'patch'] },
      ],
    });
    const r = await cli(['--account', denied, '--kubeconfig', caller.kubeconfigPath, '--out', join(work, 'esc')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `cannot apply Role scale-agent-account-${denied} in namespace ${ns.a} (dry run; nothing`,
    );
    expect(r.stderr).toContain('not currently held');
    expect(await exists(['namespace', ns.deniedSa])).toBe(false);
    expect(await exists(['role', `scale-agent-account-${denied}`, '-n', ns.a])).toBe(false);
  });

  it('an account namespace that does not exist: named, before any change', async () => {
    const r = await cli(['--account', ghost, '--out', join(work, 'ghost')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`namespaces "kc-missing-${suffix}" not found`);
    expect(await exists(['namespace', ns.deniedSa])).toBe(false);
  });

  it('--dry-run prints the objects and applies none', async () => {
    const r = await cli(['--account', denied, '--out', join(work, 'dry.kubeconfig'), '--dry-run']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('kind: RoleBinding');
    expect(r.stdout).toContain(`name: scale-agent-${denied}`);
    expect(await exists(['namespace', ns.deniedSa])).toBe(false);
    expect(await exists(['role', `scale-agent-account-${denied}`, '-n', ns.a])).toBe(false);
  });

  it('an unknown account, naming the kubeconfig accounts there are', async () => {
    const r = await cli(['--account', 'nope', '--out', join(work, 'x')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`has no account 'nope'; kubeconfig accounts: ${team}, ${ro}, ${denied}, ${ghost}`);
  });

  it('an agent-mode account, which needs no kubeconfig', async () => {
    const r = await cli(['--account', edge, '--out', join(work, 'x')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('mode agent');
    expect(r.stderr).toContain('needs no kubeconfig');
  });

  it('an unreachable cluster (exit 3)', async () => {
    const dead = join(work, 'dead.kubeconfig');
    const admin = await readFile(testEnv().kubeconfig, 'utf8');
    // The same credentials, at a loopback port nothing listens on.
    await writeFile(dead, admin.replace(testEnv().server, 'https://127.0.0.1:1'));
    const r = await cli(['--account', team, '--kubeconfig', dead, '--out', join(work, 'x')]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("cannot reach the target cluster's API server https://127.0.0.1:1");
  });
});
