import { ScaleAgentError, type ErrorDetail } from '../shared/errors.js';
import { versionInfo } from '../shared/version.js';
import { loadYamlFile, parseYamlSource, type LoadedYaml, type LoadOptions } from './load.js';
import { schemaErrors, schemaValidator } from '../shared/yaml-config.js';
import { semanticErrors } from './semantic.js';
import { normalizeTopology, type Topology, type TopologyInput } from './topology.js';

export interface ValidationResult {
  ok: boolean;
  file: string;
  errors: ErrorDetail[];
  topology?: Topology;
  source?: LoadedYaml;
}

/** Schema, then semantic rules (only on schema-valid input, so they can trust shapes); every error at once. */
export function validateLoaded(src: LoadedYaml): ValidationResult {
  const validate = schemaValidator<TopologyInput>('topology');
  if (src.data === null || src.data === undefined) {
    const message = 'the file is empty: a topology starts with apiVersion: scale-agent.io/v1alpha1 and kind: Topology';
    return { ok: false, file: src.file, errors: [{ file: src.file, path: '/', message }], source: src };
  }
  if (typeof src.data !== 'object' || Array.isArray(src.data)) {
    const what = Array.isArray(src.data) ? 'a list' : `a single ${typeof src.data} value`;
    const message = `the file holds ${what}, not a YAML mapping: a topology starts with apiVersion: scale-agent.io/v1alpha1 and kind: Topology`;
    return { ok: false, file: src.file, errors: [src.detail('', message)], source: src };
  }
  if (!validate(src.data)) {
    return { ok: false, file: src.file, errors: byPosition(schemaErrors(validate.errors ?? [], src)), source: src };
  }
  const input = src.data as TopologyInput;
  const errors = byPosition(semanticErrors(input, src));
  if (errors.length > 0) return { ok: false, file: src.file, errors, source: src };
  return {
    ok: true,
    file: src.file,
    errors: [],
    topology: normalizeTopology(input, versionInfo().version),
    source: src,
  };
}

/** Loads and validates; throws ScaleAgentError (INVALID_INPUT with details) when anything is wrong. */
export async function loadTopology(
  file: string,
  options: LoadOptions = {},
): Promise<{ topology: Topology; source: LoadedYaml }> {
  const result = validateLoaded(await loadYamlFile(file, options));
  return assertValid(result);
}

export function loadTopologySource(
  text: string,
  file: string,
  options: LoadOptions = {},
): { topology: Topology; source: LoadedYaml } {
  return assertValid(validateLoaded(parseYamlSource(text, file, options)));
}

function assertValid(result: ValidationResult): { topology: Topology; source: LoadedYaml } {
  if (!result.ok || !result.topology || !result.source) {
    const n = result.errors.length;
    throw new ScaleAgentError('INVALID_INPUT', `${result.file}: ${n} error${n === 1 ? '' : 's'}`, {
      details: result.errors,
    });
  }
  return { topology: result.topology, source: result.source };
}

function byPosition(errors: ErrorDetail[]): ErrorDetail[] {
  return [...errors].sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
}
