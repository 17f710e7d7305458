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
});
