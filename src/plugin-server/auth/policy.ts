import type { AuthorizationConfig, IdentityRule } from '../config.js';
import type { Identity } from './identity.js';

/** `*` any run of characters, `?` one character; everything else literal. */
export function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

interface CompiledRule {
  rule: IdentityRule;
  field: 'uri' | 'dns' | 'subject' | 'token';
  value: RegExp;
  accounts: RegExp[];
  zones: string[];
}

export type PolicyMode = 'enforce' | 'deny-all' | 'open';

export type Verdict = { ok: true } | { ok: false; reason: string };

/**
 * Which identity may register which account names (docs/architecture.md). Modes:
 * - enforce: the configured identities, nothing else;
 * - deny-all: mTLS on and no policy configured: locked down, every registration is refused;
 * - open: neither client certificates nor a policy (plaintext development setups): anything goes.
 */
export class AuthorizationPolicy {
  readonly mode: PolicyMode;
  private readonly rules: CompiledRule[];

  constructor(config: AuthorizationConfig | undefined, requireClientCert: boolean) {
    this.mode = config ? 'enforce' : requireClientCert ? 'deny-all' : 'open';
    this.rules = (config?.identities ?? []).map((rule) => {
      const field = (['uri', 'dns', 'subject', 'token'] as const).find((f) => rule.match[f] !== undefined)!;
      return {
        rule,
        field,
        value: globToRegExp(rule.match[field]!),
        accounts: rule.accounts.map(globToRegExp),
        zones: rule.zones ?? [],
      };
    });
  }

  private matching(identity: Identity): CompiledRule[] {
    return this.rules.filter((r) => {
      switch (r.field) {
        case 'uri':
          return identity.uris.some((u) => r.value.test(u));
        case 'dns':
          return identity.dnsNames.some((d) => r.value.test(d));
        case 'subject':
          return (
            (identity.subject !== undefined && r.value.test(identity.subject)) ||
            (identity.commonName !== undefined && r.value.test(`CN=${identity.commonName}`))
          );
        case 'token':
          return identity.token !== undefined && r.value.test(identity.token);
      }
      return false;
    });
  }

  /** May `identity` register the (static) account `name`? */
  authorize(identity: Identity, name: string): Verdict {
    if (this.mode === 'open') return { ok: true };
    if (identity.badToken) return { ok: false, reason: 'unauthorized: the bearer token presented is not known' };
    if (this.mode === 'deny-all') {
      return {
        ok: false,
        reason:
          `unauthorized: no authorization policy is configured, so no identity may register accounts ` +
          `(identity ${identity.name})`,
      };
    }
    const rules = this.matching(identity);
    if (rules.length === 0) {
      return { ok: false, reason: `unauthorized: identity ${identity.name} matches no authorization rule` };
    }
    if (rules.some((r) => r.accounts.some((a) => a.test(name)))) return { ok: true };
    return { ok: false, reason: `unauthorized: identity ${identity.name} may not register account ${name}` };
  }

  /** May agents of `identity` be assigned the dynamic account `name` of zone `zoneId`? */
  mayServeDynamic(identity: Identity, name: string, zoneId: string): Verdict {
    if (this.mode === 'open') return { ok: true };
    const direct = this.authorize(identity, name);
    if (direct.ok) return direct;
    if (this.matching(identity).some((r) => r.zones.includes('*') || r.zones.includes(zoneId))) return { ok: true };
    return {
      ok: false,
      reason: `unauthorized: identity ${identity.name} may not serve account ${name} (zone ${zoneId || 'none'})`,
    };
  }
}
