import { ScaleAgentError } from '../../shared/errors.js';
import type { IndexDefinition } from './store.js';

/**
 * The named indexes registered on one cache (ObjectCache.addIndex), with the rules both backends keep: registered
 * before the first write, each name filled by one definition, and only names the backend can keep.
 */
export class IndexRegistry {
  private readonly definitions: IndexDefinition[] = [];
  /** Every registered index name, in registration order. */
  readonly names: string[] = [];

  constructor(
    /** The backend's own limit (the MySQL store keeps its indexes in columns); undefined: any name. */
    private readonly keeps?: { names: readonly string[]; why: string },
  ) {}

  add(definition: IndexDefinition, written: boolean): void {
    if (this.definitions.includes(definition)) return;
    if (written) {
      throw new ScaleAgentError('CONFLICT', `index ${definition.names.join(', ')} registered after the first write`);
    }
    for (const name of definition.names) {
      if (this.names.includes(name)) throw new ScaleAgentError('CONFLICT', `index ${name} is already registered`);
      if (this.keeps && !this.keeps.names.includes(name)) {
        throw new ScaleAgentError('INVALID_INPUT', `index ${name}: ${this.keeps.why}`);
      }
    }
    this.definitions.push(definition);
    this.names.push(...definition.names);
  }

  list(): readonly IndexDefinition[] {
    return this.definitions;
  }

  /** The index `name`, which must be registered. */
  require(name: string): void {
    if (!this.names.includes(name)) throw new ScaleAgentError('NOT_FOUND', `index ${name} is not registered`);
  }
}
