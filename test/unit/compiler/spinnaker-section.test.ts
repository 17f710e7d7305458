import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parsePluginServerConfig } from '../../../src/plugin-server/config.js';
import { docs, MINIMAL, synthText, tempDir } from './_helpers.js';

const withSpinnaker = (section: string) => MINIMAL.replace('agents:\n', `spinnaker:\n${section}agents:\n`);

const pluginServerConfig = (manifests: string) =>
  parse(
    (docs(manifests).find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data[
      'config.yaml'
    ] as string,
  ) as { spinnaker?: { upstream?: { baseUrl: string } } };

describe('topology spinnaker section', () => {
  it('front (the default mode): the plugin-server gets spinnaker.upstream; the summary says what to set where', async () => {
    await using tmp = await tempDir();
    const r = await synthText(
      withSpinnaker('  upstream: { baseUrl: "http://spin-clouddriver.spinnaker:7002" }\n'),
      tmp.dir,
    );
    const cfg = pluginServerConfig(r.files.get('manifests/plugin-server.yaml') as string);
    expect(cfg.spinnaker?.upstream?.baseUrl).toBe('http://spin-clouddriver.spinnaker:7002');
    // What synth writes is what the plugin-server accepts, with its timeouts defaulted.
    const configText = (
      docs(r.files.get('manifests/plugin-server.yaml') as string).find((o) => o.kind === 'ConfigMap') as unknown as {
        data: Record<string, string>;
      }
    ).data['config.yaml'] as string;
    expect(parsePluginServerConfig(configText).spinnaker?.upstream).toMatchObject({ timeoutMs: 30000 });
    const lines = r.summary.spinnaker.join('\n');
    expect(lines).toContain('front mode');
    expect(lines).toContain('gate-local.yml, orca-local.yml, fiat-local.yml, rosco-local.yml, igor-local.yml');
    expect(lines).toMatch(
      / {2}services:\n {4}clouddriver:\n {6}baseUrl: http:\/\/scale-agent-plugin-server\.cp\.svc:7002/,
    );
  });

  it("orca-only: no upstream in the plugin-server; Orca's read and write lists alike, by the accounts' names", async () => {
    await using tmp = await tempDir();
    const r = await synthText(
      withSpinnaker('  mode: orca-only\n  upstream: { baseUrl: "http://spin-clouddriver:7002" }\n'),
      tmp.dir,
    );
    expect(pluginServerConfig(r.files.get('manifests/plugin-server.yaml') as string).spinnaker).toBeUndefined();
    const lines = r.summary.spinnaker;
    const start = lines.findIndex((l) => l.startsWith('set in orca-local.yml'));
    const snippet = parse(
      lines
        .slice(start + 1)
        .filter((l, i, all) => all.slice(0, i + 1).every((x) => x.startsWith('  ')))
        .join('\n'),
    ) as {
      clouddriver: Record<
        'readonly' | 'writeonly',
        { baseUrls: { baseUrl: string; config?: { accountPattern: string } }[] }
      >;
    };
    expect(snippet.clouddriver.readonly).toEqual(snippet.clouddriver.writeonly);
    expect(snippet.clouddriver.readonly.baseUrls).toEqual([
      {
        baseUrl: 'http://scale-agent-plugin-server.cp.svc:7002',
        priority: 10,
        config: {
          selectorClass: 'com.netflix.spinnaker.kork.web.selector.ByAccountServiceSelector',
          accountPattern: 'ops|prod',
        },
      },
      { baseUrl: 'http://spin-clouddriver:7002' },
    ]);
  });

  it('fiat: the plugin-server checks READ with Fiat, in the manifests and the Helm values alike, in either mode', async () => {
    await using tmp = await tempDir();
    const fiat = '  fiat: { baseUrl: "http://spin-fiat.spinnaker:7003" }\n';
    const front = await synthText(withSpinnaker(`  upstream: { baseUrl: "http://cd:7002" }\n${fiat}`), tmp.dir);
    const manifestConfig = pluginServerConfig(front.files.get('manifests/plugin-server.yaml') as string);
    expect(manifestConfig.spinnaker).toEqual({
      upstream: { baseUrl: 'http://cd:7002' },
      fiat: { baseUrl: 'http://spin-fiat.spinnaker:7003' },
    });
    const values = parse(front.files.get('helm/plugin-server.values.yaml') as string) as {
      pluginServer: { config: { spinnaker?: unknown } };
    };
    expect(values.pluginServer.config.spinnaker).toEqual(manifestConfig.spinnaker);
    // What synth writes is what the plugin-server accepts, its cache time defaulted to Fiat's own client's.
    const accepted = parsePluginServerConfig(JSON.stringify(values.pluginServer.config));
    expect(accepted.spinnaker?.fiat).toEqual({
      baseUrl: 'http://spin-fiat.spinnaker:7003',
      cacheSeconds: 20,
      missRefreshSeconds: 2,
      timeoutMs: 5000,
    });

    await using tmp2 = await tempDir();
    const orcaOnly = await synthText(
      withSpinnaker(`  mode: orca-only\n  upstream: { baseUrl: "http://cd:7002" }\n${fiat}`),
      tmp2.dir,
    );
    expect(pluginServerConfig(orcaOnly.files.get('manifests/plugin-server.yaml') as string).spinnaker).toEqual({
      fiat: { baseUrl: 'http://spin-fiat.spinnaker:7003' },
    });
  });

  it('orca-only: an accountPattern of its own is used as given', async () => {
    await using tmp = await tempDir();
    const r = await synthText(
      withSpinnaker('  mode: orca-only\n  upstream: { baseUrl: "http://cd:7002" }\n  accountPattern: "agent-.*"\n'),
      tmp.dir,
    );
    expect(r.summary.spinnaker.join('\n')).toContain('accountPattern: agent-.*');
  });

  it('accountPattern in front mode is refused, located', async () => {
    await using tmp = await tempDir();
    await expect(
      synthText(withSpinnaker('  upstream: { baseUrl: "http://cd:7002" }\n  accountPattern: "agent-.*"\n'), tmp.dir),
    ).rejects.toMatchObject({
      details: [
        expect.objectContaining({ path: '/spinnaker/accountPattern', message: expect.stringMatching(/orca-only/) }),
      ],
    });
  });

  const ARTIFACTS =
    '  artifacts:\n' +
    '    http:\n' +
    '      - name: team-manifests\n' +
    '        allowedHosts: [manifests.example.com, "*.files.example.com"]\n' +
    '        usernamePasswordSecret: { name: artifact-creds, key: team }\n' +
    '      - name: releases\n' +
    '        allowedHosts: ["releases.example.com:8443"]\n' +
    '        tokenSecret: { name: release-token, key: token }\n' +
    '      - name: public\n' +
    '        allowedHosts: [public.example.com]\n' +
    '    timeoutMs: 5000\n' +
    '    maxBytes: 1048576\n';

  it('artifacts without upstream: the config names the mounted Secret keys, in the manifests and the Helm values alike', async () => {
    await using tmp = await tempDir();
    const r = await synthText(withSpinnaker(ARTIFACTS), tmp.dir);
    const manifests = r.files.get('manifests/plugin-server.yaml') as string;
    const cfg = pluginServerConfig(manifests) as { spinnaker?: { upstream?: unknown; artifacts?: unknown } };
    expect(cfg.spinnaker).toEqual({
      artifacts: {
        http: [
          {
            name: 'team-manifests',
            allowedHosts: ['manifests.example.com', '*.files.example.com'],
            usernamePasswordFile: '/etc/scale-agent/artifact-secrets/artifact-creds/team',
          },
          {
            name: 'releases',
            allowedHosts: ['releases.example.com:8443'],
            tokenFile: '/etc/scale-agent/artifact-secrets/release-token/token',
          },
          { name: 'public', allowedHosts: ['public.example.com'] },
        ],
        timeoutMs: 5000,
        maxBytes: 1048576,
      },
    });
    // Each Secret mounted read-only where the config reads it.
    const deployment = docs(manifests).find((o) => o.kind === 'Deployment') as unknown as {
      spec: { template: { spec: { volumes: Record<string, unknown>[]; containers: { volumeMounts: unknown[] }[] } } };
    };
    const pod = deployment.spec.template.spec;
    expect(pod.volumes).toEqual(
      expect.arrayContaining([
        { name: 'artifact-secret-0', secret: { secretName: 'artifact-creds' } },
        { name: 'artifact-secret-1', secret: { secretName: 'release-token' } },
      ]),
    );
    expect(pod.containers[0]?.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: 'artifact-secret-0', mountPath: '/etc/scale-agent/artifact-secrets/artifact-creds', readOnly: true },
        { name: 'artifact-secret-1', mountPath: '/etc/scale-agent/artifact-secrets/release-token', readOnly: true },
      ]),
    );
    const values = parse(r.files.get('helm/plugin-server.values.yaml') as string) as {
      pluginServer: { config: { spinnaker?: unknown }; extraVolumes?: unknown[]; extraVolumeMounts?: unknown[] };
    };
    expect(values.pluginServer.config.spinnaker).toEqual(cfg.spinnaker);
    expect(values.pluginServer.extraVolumes).toEqual([
      { name: 'artifact-secret-0', secret: { secretName: 'artifact-creds' } },
      { name: 'artifact-secret-1', secret: { secretName: 'release-token' } },
    ]);
    expect(values.pluginServer.extraVolumeMounts).toHaveLength(2);
    // The plugin-server accepts what synth writes.
    const accepted = parsePluginServerConfig(JSON.stringify(values.pluginServer.config));
    expect(accepted.spinnaker?.artifacts?.http.map((h) => h.name)).toEqual(['team-manifests', 'releases', 'public']);
    expect(r.summary.places.flatMap((p) => p.requires).join('\n')).toContain(
      'Secret release-token (key token: bearer token of artifact account releases)',
    );
  });

  it('artifacts in orca-only mode reach the plugin-server (it has no upstream there)', async () => {
    await using tmp = await tempDir();
    const r = await synthText(
      withSpinnaker(`  mode: orca-only\n  upstream: { baseUrl: "http://cd:7002" }\n${ARTIFACTS}`),
      tmp.dir,
    );
    const cfg = pluginServerConfig(r.files.get('manifests/plugin-server.yaml') as string) as {
      spinnaker?: { artifacts?: { http: unknown[] } };
    };
    expect(cfg.spinnaker?.artifacts?.http).toHaveLength(3);
  });

  it('artifact accounts in front mode are refused, located, as the plugin-server refuses them at start', async () => {
    await using tmp = await tempDir();
    await expect(
      synthText(withSpinnaker(`  upstream: { baseUrl: "http://cd:7002" }\n${ARTIFACTS}`), tmp.dir),
    ).rejects.toMatchObject({
      details: [
        expect.objectContaining({ path: '/spinnaker/artifacts/http', message: expect.stringMatching(/front mode/) }),
      ],
    });
  });

  it('artifact accounts with two credentials, a repeated name, or the embedded account name are refused, located', async () => {
    await using tmp = await tempDir();
    const bad =
      '  artifacts:\n    http:\n' +
      '      - { name: a, allowedHosts: [h.example.com], tokenSecret: { name: s, key: t }, usernamePasswordSecret: { name: s, key: u } }\n' +
      '      - { name: a, allowedHosts: [h.example.com] }\n' +
      '      - { name: embedded-artifact, allowedHosts: [h.example.com] }\n';
    await expect(synthText(withSpinnaker(bad), tmp.dir)).rejects.toMatchObject({
      details: [
        expect.objectContaining({ path: '/spinnaker/artifacts/http/0/tokenSecret' }),
        expect.objectContaining({ path: '/spinnaker/artifacts/http/1/name' }),
        expect.objectContaining({ path: '/spinnaker/artifacts/http/2/name' }),
      ],
    });
  });

  it('fiat without upstream (standalone): the plugin-server checks READ with Fiat and has no upstream', async () => {
    await using tmp = await tempDir();
    const r = await synthText(withSpinnaker('  fiat: { baseUrl: "http://spin-fiat:7003" }\n'), tmp.dir);
    expect(pluginServerConfig(r.files.get('manifests/plugin-server.yaml') as string).spinnaker).toEqual({
      fiat: { baseUrl: 'http://spin-fiat:7003' },
    });
  });

  it('mode without upstream is refused, located', async () => {
    await using tmp = await tempDir();
    await expect(synthText(withSpinnaker('  mode: orca-only\n'), tmp.dir)).rejects.toMatchObject({
      details: [expect.objectContaining({ path: '/spinnaker/mode', message: expect.stringMatching(/upstream/) })],
    });
  });
});
