export {
  isSecretReference,
  parseSecretReference,
  referenceParams,
  referenceProblem,
  type SecretReference,
} from './reference.js';
export { SecretResolver, type OpenSecret, type SecretEngine } from './registry.js';
export { VaultEngine, type VaultSettings } from './vault.js';
