import { describe, expect, it } from 'vitest';
import {
  AGENT_ONLY_OPTIONS,
  OPTION_FLAGS,
  OPTION_LISTS,
  optionsFromWire,
  optionsToWire,
  recordedOptions,
  updatedOptions,
  type DeclaredOptions,
} from '../../../src/shared/account-options.js';
import { Account } from '../../../src/shared/proto.js';
import { schemaDefaults, schemaProperties } from '../../../src/shared/yaml-config.js';

const OPTIONS = 'account-options.schema.json#/$defs/options';

/** An account declaring every recorded option away from its default. */
const declared = (): DeclaredOptions => ({
  namespaces: ['shop'],
  omitNamespaces: ['kube-system'],
  kinds: ['Deployment'],
  omitKinds: ['Event'],
  permissions: { READ: ['dev'], WRITE: ['ops'] },
  onlySpinnakerManaged: true,
  cacheAllApplicationRelationships: true,
});

describe('account options: one table from the schema to the wire and the record', () => {
  it('places every option of the schema: a list, a switch, permissions or the agent only', () => {
    const placed = [...OPTION_LISTS, ...OPTION_FLAGS, ...AGENT_ONLY_OPTIONS, 'permissions'];
    expect([...schemaProperties(OPTIONS).keys()].sort()).toEqual(placed.sort());
  });

  it('an account declaring none records the schema defaults', () => {
    const defaults = schemaDefaults(OPTIONS);
    const recorded = recordedOptions({});
    for (const k of [...OPTION_LISTS, ...OPTION_FLAGS]) expect(recorded[k], k).toEqual(defaults[k]);
    expect(recorded.permissions).toEqual({ READ: [], WRITE: [] });
  });

  it('every option survives the wire (encoded and decoded by the protocol) into the record', () => {
    const wire = Account.decode(
      Account.encode({ name: 'a', cluster: undefined, ...optionsToWire(declared()) }).finish(),
    );
    expect(optionsFromWire(wire)).toEqual(declared());
    const none = Account.decode(Account.encode({ name: 'a', cluster: undefined, ...optionsToWire({}) }).finish());
    expect(optionsFromWire(none)).toEqual(recordedOptions({}));
  });

  it('records copies of the declared arrays', () => {
    const d = declared();
    const recorded = recordedOptions(d);
    recorded.namespaces.push('other');
    recorded.permissions.READ.push('other');
    expect(d).toEqual(declared());
  });

  it('an update replaces the options it gives (permissions as a whole) and keeps the others', () => {
    const stored = declared();
    expect(updatedOptions({}, stored)).toEqual(declared());
    expect(updatedOptions({ kinds: [], onlySpinnakerManaged: false, permissions: { READ: ['x'] } }, stored)).toEqual({
      ...declared(),
      kinds: [],
      onlySpinnakerManaged: false,
      permissions: { READ: ['x'], WRITE: [] },
    });
    expect(updatedOptions({ namespaces: ['n'] }, undefined)).toEqual({ ...recordedOptions({}), namespaces: ['n'] });
  });
});
