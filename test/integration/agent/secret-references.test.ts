/**
 * Secret references in an account's kubeconfigFile (docs/secrets.md), against the real kube-apiserver: the `k8s`
 * engine reads a Secret of the agent's namespace with the agent's own ServiceAccount (RBAC: get and watch on those
 * Secrets by name, nothing else) and watches it; the `vault` engine reads Vault KV v2 from a STAND-IN for Vault
 * (test/infra/vault-stand-in.ts: Vault cannot be built here).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Agent } from '../../../src/agent/index.js';
import { parsePluginServerConfig, resolvePluginServerSecrets } from '../../../src/plugin-server/index.js';
import { createNamespace, createServiceAccount, createTestDatabase, kubectl, testEnv } from '../../infra/index.js';
import { cliCommand, PluginServerProcess } from '../../infra/processes.js';
import { VaultStandIn } from '../../infra/vault-stand-in.js';
import { logger, waitFor } from './_helpers.js';

let server: PluginServerProcess;
const agents: Agent[] = [];
const READ_CONFIGMAPS = [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }];

beforeAll(async () => {
  server = await PluginServerProcess.start({ dir: mkdtempSync(join(tmpdir(), 'secrets-it-ps-')) });
});
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
});
afterAll(async () => {
  await server?.stop();
});

interface AccountView {
  name: string;
  state: string;
  error?: string;
  forbiddenKinds: string[];
}

async function startAgent(config: object): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'secrets-it-'));
  const file = join(dir, 'agent.yaml');
  writeFileSync(
    file,
    stringify({
      server: { address: server.grpcAddress, insecure: true, backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 2 } },
      agentId: `secrets-it-${Math.random().toString(36).slice(2, 8)}`,
      admin: { host: '127.0.0.1', port: 0 },
      ...config,
    }),
  );
  const agent = await Agent.start({ configFile: file, logger, configPollMs: 1000 });
  agents.push(agent);
  return `http://127.0.0.1:${agent.admin.address?.port}`;
}

async function accounts(admin: string): Promise<Map<string, AccountView>> {
  const list = (await (await fetch(`${admin}/accounts`)).json()) as AccountView[];
  return new Map(list.map((a) => [a.name, a]));
}

async function cached(account: string, ns: string, name: string): Promise<boolean> {
  return (await server.get(`/manifests/${account}/${ns}/configmap%20${name}`)).status === 200;
}

/** Creates or replaces a Secret with the given keys (kubectl apply: an update, as a rotation is). */
async function putSecret(ns: string, name: string, data: Record<string, string>): Promise<void> {
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify(secret) });
}

/** A ServiceAccount of the agent's namespace that may get and watch exactly `secrets`, as synth grants it. */
async function agentIdentity(ns: string, secrets: string[]): Promise<string> {
  const sa = await createServiceAccount({
    namespace: ns,
    name: 'agent',
    rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: secrets, verbs: ['get', 'watch'] }],
  });
  return sa.kubeconfigPath;
}

/** `kubectl auth can-i` as the agent's identity: what its Role allows, by Secret name. */
async function canI(kubeconfig: string, ns: string, verb: string, resource: string): Promise<boolean> {
  const r = await kubectl(['auth', 'can-i', verb, resource, '-n', ns, '--kubeconfig', kubeconfig], { allowFail: true });
  return r.stdout.trim() === 'yes';
}

describe('k8s secret references', () => {
  it("needs no more than get and watch on the Secrets' names", async () => {
    const ns = await createNamespace('secrets-rbac');
    const kubeconfig = await agentIdentity(ns, ['cluster-kubeconfig']);
    expect(await canI(kubeconfig, ns, 'get', 'secrets/cluster-kubeconfig')).toBe(true);
    expect(await canI(kubeconfig, ns, 'watch', 'secrets/cluster-kubeconfig')).toBe(true);
    expect(await canI(kubeconfig, ns, 'list', 'secrets')).toBe(false);
    expect(await canI(kubeconfig, ns, 'watch', 'secrets')).toBe(false);
    expect(await canI(kubeconfig, ns, 'get', 'secrets/another')).toBe(false);
  });

  it('reads the kubeconfig from a Secret and reconnects with the new one when the Secret is rotated', async () => {
    const agentNs = await createNamespace('secrets-agent');
    const targetNs = await createNamespace('secrets-target');
    const first = await createServiceAccount({ namespace: targetNs, name: 'first', rules: READ_CONFIGMAPS });
    await putSecret(agentNs, 'cluster-kubeconfig', { config: readFileSync(first.kubeconfigPath, 'utf8') });
    await kubectl(['create', 'configmap', 'before', '-n', targetNs]);
    const account = `k8s-ref-${targetNs}`;
    const admin = await startAgent({
      secrets: {
        kubernetes: { kubeconfigFile: await agentIdentity(agentNs, ['cluster-kubeconfig']), namespace: agentNs },
      },
      kubernetes: {
        accounts: [
          {
            name: account,
            kubeconfigFile: 'encryptedFile:k8s!n:cluster-kubeconfig!k:config',
            namespaces: [targetNs],
            kinds: ['ConfigMap'],
          },
        ],
      },
    });
    await waitFor('listed through the referenced kubeconfig', () => cached(account, targetNs, 'before'));
    expect((await accounts(admin)).get(account)?.state).toBe('ready');

    // Rotation: the Secret now holds another identity's kubeconfig, one that may not read ConfigMaps. The first
    // identity still works, so only an agent that noticed the rotation (the watch) uses the new one and finds
    // ConfigMaps forbidden.
    const second = await createServiceAccount({ namespace: targetNs, name: 'second' });
    await putSecret(agentNs, 'cluster-kubeconfig', { config: readFileSync(second.kubeconfigPath, 'utf8') });
    await waitFor('reconnected with the rotated kubeconfig', async () => {
      const a = (await accounts(admin)).get(account);
      return a?.forbiddenKinds.includes('ConfigMap') ? a : undefined;
    });

    // And back: the first identity again, the account streams again.
    await putSecret(agentNs, 'cluster-kubeconfig', { config: readFileSync(first.kubeconfigPath, 'utf8') });
    await kubectl(['create', 'configmap', 'after-rotation', '-n', targetNs]);
    await waitFor('streamed after rotating back', () => cached(account, targetNs, 'after-rotation'));
    expect((await accounts(admin)).get(account)).toMatchObject({ state: 'ready', forbiddenKinds: [] });
  });

  it('fails only the accounts whose reference cannot be read, each naming its account and reference', async () => {
    const agentNs = await createNamespace('secrets-bad');
    const targetNs = await createNamespace('secrets-bad-target');
    const reader = await createServiceAccount({ namespace: targetNs, name: 'reader', rules: READ_CONFIGMAPS });
    const kubeconfig = readFileSync(reader.kubeconfigPath, 'utf8');
    await putSecret(agentNs, 'good', { config: kubeconfig });
    await putSecret(agentNs, 'other-key', { notconfig: kubeconfig });
    // Not granted to the agent: reading it must fail, and its value must appear nowhere.
    await putSecret(agentNs, 'hidden', { config: 'TOPSECRET-hidden-value' });
    await kubectl(['create', 'configmap', 'seen', '-n', targetNs]);
    const refs: Record<string, string> = {
      good: 'encryptedFile:k8s!n:good!k:config',
      absent: 'encryptedFile:k8s!n:absent!k:config',
      'missing-key': 'encryptedFile:k8s!n:other-key!k:config',
      forbidden: 'encryptedFile:k8s!n:hidden!k:config',
      'no-vault': 'encryptedFile:vault!e:secret!p:clusters/a!k:config',
      s3: 'encryptedFile:s3!r:us-west-2!f:kubeconfig',
    };
    const name = (k: string): string => `${k}-${targetNs}`;
    const admin = await startAgent({
      secrets: {
        kubernetes: {
          kubeconfigFile: await agentIdentity(agentNs, ['good', 'absent', 'other-key']),
          namespace: agentNs,
        },
      },
      kubernetes: {
        accounts: Object.entries(refs).map(([k, ref]) => ({
          name: name(k),
          kubeconfigFile: ref,
          namespaces: [targetNs],
          kinds: ['ConfigMap'],
        })),
      },
    });
    await waitFor('the good account streams', () => cached(name('good'), targetNs, 'seen'));
    const view = await waitFor('every bad account failed', async () => {
      const v = await accounts(admin);
      return Object.keys(refs).every((k) => k === 'good' || v.get(name(k))?.state === 'failed') ? v : undefined;
    });
    expect(view.get(name('good'))?.state).toBe('ready');
    const reasons: Record<string, RegExp> = {
      absent: /Secret .*\/absent not found/,
      'missing-key': /has no key 'config' \(keys: notconfig\)/,
      forbidden: /may not get Secret .*\/hidden/,
      'no-vault': /vault references need secrets\.vault/,
      s3: /engine 's3' \(Amazon S3\) is not supported/,
    };
    for (const [k, reason] of Object.entries(reasons)) {
      const error = view.get(name(k))?.error ?? '';
      expect(error).toContain(`account ${name(k)}`);
      expect(error).toContain(refs[k]);
      expect(error).toMatch(reason);
      expect(error).not.toContain('TOPSECRET');
      expect(error).not.toContain(reader.token);
    }
  });
});

describe('the stream token from a secret reference', () => {
  let tokenServer: PluginServerProcess;
  const token = randomBytes(24).toString('hex');

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'secrets-token-ps-'));
    writeFileSync(join(dir, 'agent-tokens'), `${token} team-ref\n`, { mode: 0o600 });
    tokenServer = await PluginServerProcess.start({
      dir,
      name: 'token-server',
      extra: {
        authorization: {
          agentTokensFile: join(dir, 'agent-tokens'),
          identities: [{ match: { token: 'team-ref' }, accounts: ['token-ref-*'] }],
        },
      },
    });
  });
  afterAll(async () => {
    await tokenServer?.stop();
  });

  it("server.tokenFile: encryptedFile:k8s!... authenticates the agent with the Secret's token", async () => {
    const agentNs = await createNamespace('secrets-token');
    await putSecret(agentNs, 'agent-token', { token: `${token}\n` });
    const dir = mkdtempSync(join(tmpdir(), 'secrets-token-'));
    const file = join(dir, 'agent.yaml');
    writeFileSync(
      file,
      stringify({
        server: {
          address: tokenServer.grpcAddress,
          insecure: true,
          tokenFile: 'encryptedFile:k8s!n:agent-token!k:token',
          backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 2 },
        },
        agentId: `token-ref-${agentNs}`,
        admin: { host: '127.0.0.1', port: 0 },
        secrets: { kubernetes: { kubeconfigFile: await agentIdentity(agentNs, ['agent-token']), namespace: agentNs } },
        kubernetes: {
          accounts: [{ name: `token-ref-${agentNs}`, kubeconfigFile: testEnv().kubeconfig, kinds: ['Namespace'] }],
        },
      }),
    );
    agents.push(await Agent.start({ configFile: file, logger }));
    const view = await waitFor('the agent registered with its token', async () =>
      (
        await tokenServer.get<{ agentId: string; authIdentity: string; accounts: string[] }[]>('/armory/agents')
      ).body.find((a) => a.agentId === `token-ref-${agentNs}`),
    );
    expect(view.authIdentity).toBe('token:team-ref');
    expect(view.accounts).toEqual([`token-ref-${agentNs}`]);
  });
});

describe('vault secret references (against a Vault stand-in)', () => {
  let vault: VaultStandIn;
  beforeAll(async () => {
    vault = new VaultStandIn();
    await vault.start();
  });
  afterAll(async () => {
    await vault?.stop();
  });

  it('logs in with Kubernetes auth, reads KV v2, and follows a new version', async () => {
    const targetNs = await createNamespace('vault-target');
    const first = await createServiceAccount({ namespace: targetNs, name: 'first', rules: READ_CONFIGMAPS });
    vault.write('secret', 'clusters/target', { config: readFileSync(first.kubeconfigPath, 'utf8') });
    const dir = mkdtempSync(join(tmpdir(), 'vault-jwt-'));
    writeFileSync(join(dir, 'token'), 'the-pods-serviceaccount-jwt');
    vault.allowKubernetesLogin('kubernetes', 'scale-agent', 'the-pods-serviceaccount-jwt');
    await kubectl(['create', 'configmap', 'before', '-n', targetNs]);
    const account = `vault-${targetNs}`;
    const admin = await startAgent({
      secrets: {
        vault: {
          url: vault.baseUrl,
          authMethod: 'KUBERNETES',
          role: 'scale-agent',
          serviceAccountTokenFile: join(dir, 'token'),
          refreshSeconds: 1,
        },
      },
      kubernetes: {
        accounts: [
          {
            name: account,
            kubeconfigFile: 'encryptedFile:vault!e:secret!p:clusters/target!k:config',
            namespaces: [targetNs],
            kinds: ['ConfigMap'],
          },
        ],
      },
    });
    await waitFor('listed through the Vault kubeconfig', () => cached(account, targetNs, 'before'));
    expect(vault.requests.filter((r) => r.path === '/v1/auth/kubernetes/login')).toHaveLength(1);
    expect(vault.requests.some((r) => r.path === '/v1/secret/data/clusters/target' && r.token)).toBe(true);

    // A new version in Vault: an identity that may not read ConfigMaps. The first still works, so only an agent
    // that read the new version uses it (and finds ConfigMaps forbidden).
    const second = await createServiceAccount({ namespace: targetNs, name: 'second' });
    vault.write('secret', 'clusters/target', { config: readFileSync(second.kubeconfigPath, 'utf8') });
    await waitFor('reconnected with the new version', async () =>
      (await accounts(admin)).get(account)?.forbiddenKinds.includes('ConfigMap'),
    );
    // A revoked token is answered 403: the engine logs in again rather than failing, and follows the next version.
    vault.revokeAll();
    vault.write('secret', 'clusters/target', { config: readFileSync(first.kubeconfigPath, 'utf8') });
    await kubectl(['create', 'configmap', 'after-rotation', '-n', targetNs]);
    await waitFor('streamed with the third version', () => cached(account, targetNs, 'after-rotation'));
    expect(vault.requests.filter((r) => r.path === '/v1/auth/kubernetes/login').length).toBeGreaterThanOrEqual(2);
  });

  it('reads with a token from tokenFile (authMethod TOKEN), and names a missing key without its value', async () => {
    const targetNs = await createNamespace('vault-token');
    const reader = await createServiceAccount({ namespace: targetNs, name: 'reader', rules: READ_CONFIGMAPS });
    vault.write('kv', 'team/a', { kubeconfig: readFileSync(reader.kubeconfigPath, 'utf8'), unrelated: 'TOPSECRET' });
    const dir = mkdtempSync(join(tmpdir(), 'vault-token-'));
    writeFileSync(join(dir, 'token'), `${vault.issueToken()}\n`);
    await kubectl(['create', 'configmap', 'seen', '-n', targetNs]);
    const before = vault.requests.length;
    const ok = `vault-token-${targetNs}`;
    const wrongKey = `vault-wrong-key-${targetNs}`;
    const admin = await startAgent({
      secrets: { vault: { url: vault.baseUrl, authMethod: 'TOKEN', tokenFile: join(dir, 'token') } },
      kubernetes: {
        accounts: [
          { name: ok, kubeconfigFile: 'encryptedFile:vault!e:kv!p:team/a!k:kubeconfig', namespaces: [targetNs] },
          { name: wrongKey, kubeconfigFile: 'encryptedFile:vault!e:kv!p:team/a!k:config', namespaces: [targetNs] },
        ].map((a) => ({ ...a, kinds: ['ConfigMap'] })),
      },
    });
    await waitFor('listed with the token', () => cached(ok, targetNs, 'seen'));
    const failed = await waitFor('the wrong key fails', async () => {
      const a = (await accounts(admin)).get(wrongKey);
      return a?.state === 'failed' ? a : undefined;
    });
    expect(failed.error).toContain(`account ${wrongKey}`);
    expect(failed.error).toContain('encryptedFile:vault!e:kv!p:team/a!k:config');
    expect(failed.error).toContain("no string key 'config' (keys: kubeconfig, unrelated)");
    expect(failed.error).not.toContain('TOPSECRET');
    // TOKEN: no login, only reads with the token.
    expect(vault.requests.slice(before).some((r) => r.path.startsWith('/v1/auth/'))).toBe(false);
    expect(vault.requests.slice(before).every((r) => r.token)).toBe(true);
  });

  // The plugin-server reads the same kork references in its own config (src/plugin-server/secrets.ts): here its
  // MySQL URL, from the same Vault stand-in, against the real MariaDB.
  it('plugin-server: storage.url from Vault starts and serves; a wrong reference fails naming the field', async () => {
    const db = await createTestDatabase('secret_ref');
    const dir = mkdtempSync(join(tmpdir(), 'ps-vault-'));
    try {
      vault.write('secret', 'spinnaker/mysql', { url: db.url, password: 'only-a-password' });
      writeFileSync(join(dir, 'vault-token'), `${vault.issueToken()}\n`);
      const secrets = { vault: { url: vault.baseUrl, authMethod: 'TOKEN', tokenFile: join(dir, 'vault-token') } };
      const before = vault.requests.length;
      const ps = await PluginServerProcess.start({
        dir,
        name: 'ps-vault',
        storage: { type: 'mysql', url: 'encrypted:vault!e:secret!p:spinnaker/mysql!k:url' },
        extra: { secrets },
      });
      try {
        expect((await ps.get('/readyz')).status).toBe(200);
        expect((await ps.get('/credentials')).status).toBe(200);
        expect(vault.requests.slice(before).map((r) => r.path)).toContain('/v1/secret/data/spinnaker/mysql');
        // It is MySQL the server uses: its schema is in the database the URL names.
        const conn = await createConnection(db.url);
        try {
          const [tables] = await conn.query('SHOW TABLES');
          expect((tables as unknown[]).length).toBeGreaterThan(0);
        } finally {
          await conn.end();
        }
      } finally {
        await ps.stop();
      }

      const cases = [
        [{ url: 'encrypted:vault!e:secret!p:spinnaker/mysql!k:uri' }, "no string key 'uri' (keys: password, url)"],
        [{ url: 'encrypted:vault!e:secret!p:spinnaker/mysql!k:password' }, 'holds no mysql:// URL'],
        [{ urlFile: 'encryptedFile:vault!e:secret!p:spinnaker/nothing!k:url' }, 'Vault has no secret at'],
        [{ url: 'encrypted:k8s!n:mysql!k:url' }, 'the plugin-server reads no Kubernetes Secrets itself'],
      ] as const;
      const configOf = (storage: object): string =>
        stringify({
          grpc: { host: '127.0.0.1', port: 0 },
          http: { host: '127.0.0.1', port: 0 },
          storage: { type: 'mysql', ...storage },
          secrets,
        });
      const expectNamed = (message: string, storage: (typeof cases)[number][0], said: string): void => {
        const [field, reference] = Object.entries(storage)[0] as [string, string];
        expect(message).toContain(`storage.${field}: secret reference ${reference}`);
        expect(message).toContain(said);
        // No secret value in what it says.
        expect(message).not.toContain('only-a-password');
        expect(message).not.toContain(db.url);
      };
      for (const [storage, said] of cases) {
        const config = parsePluginServerConfig(configOf(storage));
        const e = await resolvePluginServerSecrets(config).catch((err: Error) => err);
        expect(e, said).toBeInstanceOf(Error);
        expectNamed((e as Error).message, storage, said);
      }
      // The process itself: it exits before serving, saying which field and reference.
      const [storage, said] = cases[0];
      writeFileSync(join(dir, 'wrong.yaml'), configOf(storage));
      const { cmd, args } = cliCommand(['plugin-server', '--config', join(dir, 'wrong.yaml')]);
      // Asynchronously: the Vault stand-in answering it runs in this process.
      const r = await new Promise<{ code: number | null; stderr: string }>((done) => {
        execFile(cmd, args, { encoding: 'utf8', timeout: 60_000 }, (e, _out, stderr) =>
          done({ code: e ? (typeof e.code === 'number' ? e.code : -1) : 0, stderr }),
        );
      });
      expect(r.code, r.stderr).not.toBe(0);
      expectNamed(r.stderr, storage, said);
    } finally {
      await db.drop();
    }
  });
});
