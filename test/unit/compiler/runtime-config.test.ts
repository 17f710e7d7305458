import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import _Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadTopology, synthesize } from '../../../src/compiler/index.js';
import { ensureTopologyCerts } from '../../../src/compiler/certs.js';
import { ensureTopologySecrets } from '../../../src/compiler/generated-secrets.js';
import { AuthorizationPolicy } from '../../../src/plugin-server/auth/policy.js';
import { schemaValidator } from '../../../src/shared/yaml-config.js';
import { MINIMAL, ROOT, docs, synthText, tempDir } from './_helpers.js';

const Ajv = _Ajv as unknown as typeof _Ajv.default;

/** Every ConfigMap config.yaml and every Helm values file synth writes for the examples. */
async function emitted(): Promise<{
  agent: [string, unknown][];
  pluginServer: [string, unknown][];
  values: [string, unknown][];
}> {
  const out = {
    agent: [] as [string, unknown][],
    pluginServer: [] as [string, unknown][],
    values: [] as [string, unknown][],
  };
  for (const ex of ['service', 'infrastructure', 'agent', 'mixed']) {
    await using tmp = await tempDir();
    const { topology } = await loadTopology(join(ROOT, 'examples', `${ex}.yaml`));
    const certs = await ensureTopologyCerts(topology, tmp.dir);
    const { secrets } = await ensureTopologySecrets(topology, tmp.dir);
    const r = synthesize(topology, { version: '0.1.0', secrets, ...(certs ? { tls: certs.material } : {}) });
    for (const [path, content] of r.files) {
      if (path.startsWith('helm/')) out.values.push([`${ex}:${path}`, parse(content)]);
      if (!path.startsWith('manifests/')) continue;
      for (const o of docs(content)) {
        if (o.kind !== 'ConfigMap') continue;
        const cfg = parse((o.data as Record<string, string>)['config.yaml'] as string) as unknown;
        (o.metadata.labels?.['app.kubernetes.io/component'] === 'agent' ? out.agent : out.pluginServer).push([
          `${ex}:${path}`,
          cfg,
        ]);
      }
    }
  }
  return out;
}

describe('emitted runtime configs', () => {
  it('validate against the runtimes own schemas', async () => {
    const e = await emitted();
    expect(e.agent.length).toBeGreaterThanOrEqual(8);
    expect(e.pluginServer.length).toBe(4);
    // The validators the runtimes load their files with (the shared loader), without filling in defaults.
    const agent = schemaValidator('agent-config');
    for (const [where, cfg] of e.agent) expect(agent(cfg) ? [] : agent.errors, where).toEqual([]);

    const ps = schemaValidator('plugin-server-config');
    for (const [where, cfg] of e.pluginServer) {
      // The whole config, identity policy included: a key the runtime does not declare would fail here.
      expect(ps(cfg) ? [] : ps.errors, where).toEqual([]);
      expect((cfg as { authorization?: unknown }).authorization, where).toMatchObject({
        identities: expect.arrayContaining([
          {
            match: { uri: expect.stringMatching(/^spiffe:\/\/scale-agent\/[a-z-]+\/agent\/[a-z-]+$/) },
            accounts: expect.any(Array),
            ...(where.startsWith('infrastructure:') ? { zones: expect.any(Array) } : {}),
          },
        ]),
      });
    }
    // The schema really checks the policy: a misspelt match key or a missing accounts list is refused.
    const [, sample] = e.pluginServer[0] as [string, Record<string, unknown>];
    expect(ps({ ...sample, authorization: { identities: [{ match: { url: 'x' }, accounts: ['a'] }] } })).toBe(false);
    expect(ps({ ...sample, authorization: { identities: [{ match: { uri: 'x' } }] } })).toBe(false);
  });

  it('authorize each agent identity for exactly its own accounts', async () => {
    const e = await emitted();
    const mixed = e.pluginServer.find(([w]) => w.startsWith('mixed:'))?.[1] as { authorization: unknown };
    expect(mixed.authorization).toEqual({
      identities: [
        { match: { uri: 'spiffe://scale-agent/mixed/agent/core' }, accounts: ['ops'] },
        // examples/mixed.yaml puts group remote in zone westeurope: dynamic accounts of that zone may land there.
        { match: { uri: 'spiffe://scale-agent/mixed/agent/remote' }, accounts: ['remote-prod'], zones: ['westeurope'] },
        { match: { uri: 'spiffe://scale-agent/mixed/agent/edge' }, accounts: ['edge'] },
      ],
    });
  });

  it('helm values validate against the chart values.schema.json', async () => {
    const e = await emitted();
    const ajv = new Ajv({ allErrors: true, strict: false });
    const validate = ajv.compile(
      JSON.parse(await readFile(join(ROOT, 'charts/scale-agent/values.schema.json'), 'utf8')) as object,
    );
    expect(e.values.length).toBeGreaterThanOrEqual(18);
    for (const [where, values] of e.values) expect(validate(values) ? [] : validate.errors, where).toEqual([]);
    expect(validate({ pluginServer: { enabeld: true } })).toBe(false);
  });

  it("the plugin-server's own policy places a dynamic account of a group's zone on that group only", async () => {
    const e = await emitted();
    const mixed = e.pluginServer.find(([w]) => w.startsWith('mixed:'))?.[1] as {
      authorization: ConstructorParameters<typeof AuthorizationPolicy>[0];
    };
    const policy = new AuthorizationPolicy(mixed.authorization, true);
    const agent = (group: string) => ({
      name: group,
      via: 'certificate' as const,
      uris: [`spiffe://scale-agent/mixed/agent/${group}`],
      dnsNames: [],
    });
    // examples/mixed.yaml: group remote runs in zone westeurope; core and edge name no zone.
    expect(policy.mayServeDynamic(agent('remote'), 'dyn-eu', 'westeurope').ok).toBe(true);
    expect(policy.mayServeDynamic(agent('remote'), 'dyn-us', 'us-east-1').ok).toBe(false);
    expect(policy.mayServeDynamic(agent('core'), 'dyn-eu', 'westeurope').ok).toBe(false);
  });
});

describe('agent config of a group', () => {
  it('asks replicas of a load-sharing group to share its accounts, in the manifests and the Helm values alike', async () => {
    await using tmp = await tempDir();
    const text = MINIMAL.replace('    mode: service\n', '    mode: service\n    replicas: 2\n    loadSharing: true\n');
    expect(text).not.toBe(MINIMAL);
    const configs = (r: Awaited<ReturnType<typeof synthText>>) =>
      [...r.files]
        .filter(([path]) => path.startsWith('manifests/'))
        .flatMap(([, content]) => docs(content))
        .filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.['app.kubernetes.io/component'] === 'agent')
        .map((cm) => parse((cm.data as Record<string, string>)['config.yaml'] as string) as Record<string, unknown>);
    const sharing = configs(await synthText(text, tmp.dir));
    expect(sharing.length).toBeGreaterThan(0);
    const validate = schemaValidator('agent-config');
    for (const cfg of sharing) {
      expect(cfg.loadSharing).toBe(true);
      expect(validate(cfg) ? [] : validate.errors).toEqual([]);
    }
    const helm = [...(await synthText(text, tmp.dir)).files].filter(([path]) => path.startsWith('helm/'));
    expect(helm.some(([, content]) => content.includes('loadSharing: true'))).toBe(true);
    // Unset: left out, and the agent's default (off) applies.
    for (const cfg of configs(await synthText(MINIMAL, tmp.dir))) expect(Object.keys(cfg)).not.toContain('loadSharing');
  });
});

describe('agent config of an account', () => {
  it('carries permissions and the Clouddriver account options from the topology', async () => {
    await using tmp = await tempDir();
    const text = MINIMAL.replace(
      '        permissions: { READ: [ops], WRITE: [ops] }\n',
      '        permissions: { READ: [viewers, ops], WRITE: [ops] }\n' +
        '        onlySpinnakerManaged: true\n        cacheAllApplicationRelationships: true\n',
    );
    expect(text).not.toBe(MINIMAL);
    const r = await synthText(text, tmp.dir);
    const cms = [...r.files]
      .filter(([path]) => path.startsWith('manifests/'))
      .flatMap(([, content]) => docs(content))
      .filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.['app.kubernetes.io/component'] === 'agent');
    expect(cms.length).toBeGreaterThan(0);
    for (const cm of cms) {
      const cfg = parse((cm.data as Record<string, string>)['config.yaml'] as string) as {
        kubernetes: { accounts: Record<string, unknown>[] };
      };
      const [prod, ops] = cfg.kubernetes.accounts;
      expect(ops).toMatchObject({
        name: 'ops',
        permissions: { READ: ['viewers', 'ops'], WRITE: ['ops'] },
        onlySpinnakerManaged: true,
        cacheAllApplicationRelationships: true,
      });
      // Unset in the topology: left out, and the agent's defaults (false, unrestricted) apply.
      expect(prod).toMatchObject({ name: 'prod' });
      expect(Object.keys(prod ?? {})).not.toContain('onlySpinnakerManaged');
      expect(Object.keys(prod ?? {})).not.toContain('permissions');
    }
  });
});
