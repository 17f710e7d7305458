import { parseYamlText, readYamlFile, type LoadedYaml, type YamlLimits } from '../shared/yaml-config.js';

export type { LoadedYaml };
export type LoadOptions = YamlLimits;

/** Topologies of thousands of accounts are a few hundred KiB; anything near this is a mistake or an attack. */
export const MAX_TOPOLOGY_BYTES = 8 * 1024 * 1024;
/** Anchors are handy for shared account settings; a few hundred alias expansions are plenty for that. */
export const MAX_ALIAS_COUNT = 1000;

const limits = (options: LoadOptions): LoadOptions => ({
  maxBytes: MAX_TOPOLOGY_BYTES,
  maxAliasCount: MAX_ALIAS_COUNT,
  ...options,
});

/** A topology file through the shared loader, with the topology's limits. */
export async function loadYamlFile(file: string, options: LoadOptions = {}): Promise<LoadedYaml> {
  return readYamlFile(file, limits(options));
}

export function parseYamlSource(source: string, file: string, options: LoadOptions = {}): LoadedYaml {
  return parseYamlText(file, source, limits(options));
}
