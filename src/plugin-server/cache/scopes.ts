import { scopeId, type ResumePointRecord, type ScopeKey } from './store.js';

/** What a store knows of one watch scope (account, group, kind, watch namespace) between and after full syncs. */
export interface ScopeState {
  key: ScopeKey;
  version: string;
  /** Generation of the scope's current full sync; entries not seen in it are swept at SyncEnd. */
  gen: number;
  syncing: boolean;
  synced: boolean;
  resourceVersion: string;
}

/** The scopes of every account, shared by the memory and MySQL stores (the MySQL one also persists them). */
export class ScopeTable {
  private readonly byId = new Map<string, ScopeState>();

  get(key: ScopeKey): ScopeState | undefined {
    return this.byId.get(scopeId(key));
  }

  /** The scope, created empty if new; a non-empty `version` replaces the one it had. */
  ensure(key: ScopeKey, version: string): ScopeState {
    const id = scopeId(key);
    let s = this.byId.get(id);
    if (!s) {
      s = { key: { ...key }, version, gen: 0, syncing: false, synced: false, resourceVersion: '' };
      this.byId.set(id, s);
    }
    if (version) s.version = version;
    return s;
  }

  set(state: ScopeState): void {
    this.byId.set(scopeId(state.key), state);
  }

  /** The watch scope a change belongs to: the all-namespaces scope of its kind if there is one, else its namespace's. */
  of(account: string, group: string, kind: string, namespace: string): ScopeState | undefined {
    return (
      this.byId.get(scopeId({ account, group, kind, namespace: '' })) ??
      (namespace ? this.byId.get(scopeId({ account, group, kind, namespace })) : undefined)
    );
  }

  dropAccount(account: string): void {
    for (const [id, s] of this.byId) if (s.key.account === account) this.byId.delete(id);
  }

  /** Scopes whose last full sync completed, with the resourceVersion an agent may resume its watch from. */
  resumePoints(account: string): ResumePointRecord[] {
    const out: ResumePointRecord[] = [];
    for (const s of this.byId.values()) {
      if (s.key.account === account && s.synced && !s.syncing && s.resourceVersion) {
        out.push({ ...s.key, version: s.version, resourceVersion: s.resourceVersion });
      }
    }
    return out.sort((a, b) => (scopeId(a) < scopeId(b) ? -1 : 1));
  }
}

/**
 * Whether the scope's resume point may drop its tombstones (store.ts says why that is safe): the scope is synced and
 * not resyncing (its resume point is what an agent resumes from), and no all-namespaces scope of the kind owns the
 * namespace's objects instead (of() prefers it).
 */
export function tombstonesPrunable(s: ScopeState, scopes: ScopeTable): boolean {
  if (!s.synced || s.syncing || !s.resourceVersion) return false;
  return s.key.namespace === '' || !scopes.get({ ...s.key, namespace: '' });
}
