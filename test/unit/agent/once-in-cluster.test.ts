import { describe, expect, it } from 'vitest';
import { carriesMark, markCreation, markedJsonPatch, operationKey } from '../../../src/agent/ops/once-in-cluster.js';
import type { KubeObject } from '../../../src/shared/ops/types.js';

const LABELS_KEY = 'scale-agent.io/operation-key';
const append = { op: 'add', path: '/spec/applied/-', value: 'x' };
const obj = (metadata: KubeObject['metadata']): KubeObject => ({ apiVersion: 'v1', kind: 'Widget', metadata });

describe('markedJsonPatch', () => {
  it('adds the mark as one more key, its "/" escaped as ~1, after the caller\'s operations', () => {
    const live = obj({ name: 'w', resourceVersion: '7', annotations: { team: 'a' } });
    expect(markedJsonPatch([append], live, 't.0')).toEqual([
      append,
      { op: 'add', path: '/metadata/annotations/scale-agent.io~1last-operation-id', value: 't.0' },
    ]);
  });

  it('creates a missing annotations map only if the object is still at the resourceVersion read', () => {
    expect(markedJsonPatch([append], obj({ name: 'w', resourceVersion: '7' }), 't.0')).toEqual([
      append,
      { op: 'replace', path: '/metadata/resourceVersion', value: '7' },
      { op: 'add', path: '/metadata/annotations', value: { 'scale-agent.io/last-operation-id': 't.0' } },
    ]);
  });

  it('leaves unmarked a patch that rewrites the annotations map or a parent of it', () => {
    const live = obj({ name: 'w', annotations: {} });
    for (const op of [
      { op: 'remove', path: '/metadata/annotations' },
      { op: 'replace', path: '/metadata', value: { name: 'w' } },
      { op: 'move', from: '/metadata/annotations', path: '/spec/old' },
    ]) {
      expect(markedJsonPatch([append, op], live, 't.0')).toBeUndefined();
    }
    // A key inside the map is fine: the map is still there for the mark.
    expect(markedJsonPatch([{ op: 'remove', path: '/metadata/annotations/team' }], live, 't.0')).toHaveLength(2);
  });
});

describe('operationKey', () => {
  it('is a label value (40 hex digits) whatever the id, and differs per manifest of one operation', () => {
    const long = `${'x'.repeat(300)}/with spaces.0`;
    expect(operationKey(long, 0)).toMatch(/^[0-9a-f]{40}$/);
    expect(operationKey('t.0', 0)).not.toBe(operationKey('t.0', 1));
    expect(operationKey('t.0', 0)).toBe(operationKey('t.0', 0));
  });
});

describe('carriesMark (an unknown outcome of a marked create may be resumed)', () => {
  it('sees the mark on a manifest marked for creation', () => {
    const m = obj({ generateName: 'job-' });
    markCreation(m, 't.0', 0);
    expect(carriesMark(m)).toBe(true);
  });

  it('not on a half-marked manifest, nor on a JSON patch (its mark names only the last patch of the object)', () => {
    expect(carriesMark(obj({ generateName: 'job-', labels: { [LABELS_KEY]: 'k' } }))).toBe(false);
    expect(carriesMark(markedJsonPatch([append], obj({ name: 'w', annotations: {} }), 't.0'))).toBe(false);
    expect(carriesMark(undefined)).toBe(false);
  });
});
