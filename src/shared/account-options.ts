/**
 * The account options the plugin-server records (schemas/account-options.schema.json; the proto Account's option
 * fields), in one table: the agent reads it to announce an account and to take a dynamic account off the wire, the
 * plugin-server to record a registration, to read a stored record and to send a dynamic account. Adding such an
 * option: the schema, the proto field, a row here, and the code that uses it.
 */
import type { AccountOptions } from './config-types/account-options.js';
import type { Account } from './proto.js';

/** Lists: empty means no restriction (every namespace, the default kinds). */
export const OPTION_LISTS = ['namespaces', 'omitNamespaces', 'kinds', 'omitKinds'] as const;
/**
 * Clouddriver's account options of the same names, off unless declared: onlySpinnakerManaged (only objects Spinnaker
 * manages belong to applications; unlike Clouddriver, the others are still cached, so live /manifests reads keep
 * finding them) and cacheAllApplicationRelationships (every kind belongs to its application, not only server
 * groups, load balancers...). The plugin-server applies both as it builds its application views (views/app-index.ts).
 */
export const OPTION_FLAGS = ['onlySpinnakerManaged', 'cacheAllApplicationRelationships'] as const;
/** What the agent alone uses, to reach its cluster: never recorded. */
export const AGENT_ONLY_OPTIONS = ['context', 'serviceAccount'] as const;

type OptionList = (typeof OPTION_LISTS)[number];
type Flag = (typeof OPTION_FLAGS)[number];

// Every option of the schema is in a row above or is `permissions`: one added to the schema only fails to compile.
type Unplaced = Exclude<keyof AccountOptions, OptionList | Flag | (typeof AGENT_ONLY_OPTIONS)[number] | 'permissions'>;
export const EVERY_OPTION_PLACED: [Unplaced] extends [never] ? true : Unplaced = true;

/** Role lists per authorization, spelled as Clouddriver's and Fiat's account config spell them. */
export interface AccountPermissions {
  READ: string[];
  WRITE: string[];
}

/**
 * What an account record keeps of its options, every one present. `permissions`: the Spinnaker (Fiat) roles allowed
 * to read and to write through the account, both lists empty: unrestricted (served in /credentials for Fiat).
 */
export type RecordedOptions = Record<OptionList, string[]> &
  Record<Flag, boolean> & { permissions: AccountPermissions };

/** Options as declared, or as stored before some of them existed: an absent one is its default. */
export type DeclaredOptions = { [K in OptionList]?: readonly string[] | undefined } & {
  [K in Flag]?: boolean | undefined;
} & {
  permissions?: { READ?: readonly string[] | undefined; WRITE?: readonly string[] | undefined } | undefined;
};

/** The proto Account's option fields. */
export type WireOptions = Pick<Account, OptionList | Flag | 'permissions'>;

/** Every recorded option, defaults filled in; copies, never the input's arrays. */
export function recordedOptions(o: DeclaredOptions): RecordedOptions {
  const out = {} as RecordedOptions;
  for (const k of OPTION_LISTS) out[k] = [...(o[k] ?? [])];
  out.permissions = { READ: [...(o.permissions?.READ ?? [])], WRITE: [...(o.permissions?.WRITE ?? [])] };
  for (const k of OPTION_FLAGS) out[k] = o[k] ?? false;
  return out;
}

/**
 * An update's options over the stored ones (a dynamic account's PUT): each option given replaces the stored one,
 * `permissions` as a whole; what is not given stays as stored.
 */
export function updatedOptions(update: DeclaredOptions, stored: DeclaredOptions | undefined): RecordedOptions {
  const merged: DeclaredOptions = { permissions: update.permissions ?? stored?.permissions };
  for (const k of OPTION_LISTS) merged[k] = update[k] ?? stored?.[k];
  for (const k of OPTION_FLAGS) merged[k] = update[k] ?? stored?.[k];
  return recordedOptions(merged);
}

/** The options as the proto Account carries them. */
export function optionsToWire(o: DeclaredOptions): WireOptions {
  const { permissions, ...rest } = recordedOptions(o);
  return { ...rest, permissions: { read: permissions.READ, write: permissions.WRITE } };
}

/** The options a proto Account carries, as recorded. */
export function optionsFromWire(a: WireOptions): RecordedOptions {
  return recordedOptions({ ...a, permissions: { READ: a.permissions?.read, WRITE: a.permissions?.write } });
}
