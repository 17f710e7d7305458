import { stringify } from 'yaml';
import type { Topology } from './topology.js';

/** The Spinnaker services that call Clouddriver, each through `services.clouddriver.baseUrl` (docs/spinnaker.md). */
export const CLOUDDRIVER_CLIENTS = ['gate', 'orca', 'fiat', 'rosco', 'igor'] as const;

const SELECTOR = 'com.netflix.spinnaker.kork.web.selector.ByAccountServiceSelector';

/**
 * The Java regular expression Orca's ByAccountServiceSelector matches against lower-cased account names: the
 * topology's accounts, exactly, unless the topology gives its own.
 */
export function orcaAccountPattern(t: Topology): string {
  if (t.spinnaker?.accountPattern) return t.spinnaker.accountPattern;
  const names = t.agents.flatMap((a) => a.accounts.map((acc) => acc.name.toLowerCase()));
  return [...new Set(names)].sort().map(quoteRegex).join('|');
}

function quoteRegex(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
}

function yamlLines(value: unknown): string[] {
  return stringify(value, { lineWidth: 0 }).trimEnd().split('\n');
}

/**
 * What to put into Spinnaker's configuration for the topology's `spinnaker.mode`, as lines for the synth summary:
 * front mode points every Clouddriver client at the plugin-server; orca-only gives Orca the same account shard in
 * its read and write lists (a task is polled where its operation was posted). Empty without a `spinnaker` section.
 */
export function spinnakerSnippet(t: Topology, pluginServerUrl: string): string[] {
  const s = t.spinnaker;
  if (!s) return [];
  if (s.mode === 'front') {
    return [
      `front mode: the plugin-server passes every request not about agent accounts to ${s.upstreamUrl}`,
      `set in ${CLOUDDRIVER_CLIENTS.map((c) => `${c}-local.yml`).join(', ')} ` +
        '(Operator: spec.spinnakerConfig.profiles.<service>):',
      ...yamlLines({ services: { clouddriver: { baseUrl: pluginServerUrl } } }).map((l) => `  ${l}`),
    ];
  }
  const shards = (url: string) => ({
    baseUrls: [
      {
        baseUrl: pluginServerUrl,
        priority: 10,
        config: { selectorClass: SELECTOR, accountPattern: orcaAccountPattern(t) },
      },
      { baseUrl: url },
    ],
  });
  return [
    `orca-only mode: Clouddriver (${s.upstreamUrl}) stays in place for Gate, Fiat, Rosco and Igor; ` +
      "Deck and Fiat do not see agent accounts, and Orca's release must pass the account to its selector",
    'set in orca-local.yml (Operator: spec.spinnakerConfig.profiles.orca):',
    ...yamlLines({ clouddriver: { readonly: shards(s.upstreamUrl), writeonly: shards(s.upstreamUrl) } }).map(
      (l) => `  ${l}`,
    ),
  ];
}
