export { synthFile, type SynthFileOptions, type SynthFileResult } from './compile.js';
export {
  synthesize,
  renderPlace,
  type Place,
  type PlaceKind,
  type SynthOptions,
  type SynthResult,
  type SynthSummary,
  type TlsMaterial,
} from './synth.js';
export { baseBundle, type BaseBundle, type BaseComponent } from './base.js';
export { ensureTopologyCerts, serverDnsNames } from './certs.js';
export { ensureTopologySecrets, GENERATED_SECRET_FILES, type GeneratedSecrets } from './generated-secrets.js';
export { loadTopology, loadTopologySource, validateLoaded, type ValidationResult } from './validate.js';
export {
  loadYamlFile,
  parseYamlSource,
  MAX_TOPOLOGY_BYTES,
  MAX_ALIAS_COUNT,
  type LoadedYaml,
  type LoadOptions,
} from './load.js';
export { checkTopology, POLICY_RULES, type CheckReport, type Violation, type Severity } from './check.js';
export { agentConfig, pluginServerConfig, serverAddress } from './runtime-config.js';
export { accountRules, effectiveKinds, agentKindNames } from './rbac-rules.js';
export { writeOutput } from './write.js';
export { schemaValidator } from '../shared/yaml-config.js';
export * from './topology.js';
export * from './names.js';
export { accountCredentials, type AccountCredentials } from './account-credentials.js';
