import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { toYaml } from '../../../src/compiler/serialize.js';
import { emitYaml } from '../../../src/compiler/yaml-emit.js';

const TRICKY = [
  'y',
  'Y',
  'n',
  'yes',
  'No',
  'on',
  'OFF',
  'true',
  'False',
  'null',
  '~',
  '',
  ' ',
  'nan',
  '.inf',
  '-.inf',
  '0755',
  '0x1f',
  '1e3',
  '1_000',
  '1:20',
  '12:30:45',
  '2024-01-01',
  '0.1.0',
  '-',
  '- a',
  ': x',
  'a: b',
  'a #b',
  '#c',
  '@x',
  '`x',
  '!tag',
  '&anchor',
  '*alias',
  '%dir',
  '{a}',
  '[a]',
  '"q"',
  "'q'",
  'a\\b',
  'tab\tin',
  'tail ',
  'ünïcødé',
  'spiffe://scale-agent/t/agent/g',
  'app.kubernetes.io/name',
  '*',
  '',
  '<<',
  'line1\nline2\n',
  'no trailing\nnewline',
  'two trailing\n\n',
  '\nleading newline',
  '  indented\nblock\n',
  'cr\r\nlf',
  '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
  'a\n\n\nb\n',
];

describe('emitYaml', () => {
  it('round-trips tricky strings as YAML 1.2 and 1.1 (what Go tools read)', () => {
    const data = {
      strings: TRICKY,
      map: Object.fromEntries(TRICKY.filter((s) => !s.includes('\n')).map((s, i) => [s || `empty${i}`, s])),
      numbers: [0, 1, -1, 1.5, 1e21],
      bools: [true, false],
      nil: null,
      empty: { list: [], map: {} },
      nested: [{ a: [{ b: 1, c: [] }], d: 'x' }, [1, [2, { e: 'f' }]], []],
    };
    const text = emitYaml(data);
    expect(parse(text)).toEqual(data);
    expect(parse(text, { version: '1.1' })).toEqual(data);
  });

  it('writes readable Kubernetes-style YAML', () => {
    expect(
      emitYaml({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        data: { 'config.yaml': 'a: 1\nb: 2\n' },
        list: [{ name: 'x', v: 'y' }],
      }),
    ).toBe(
      'apiVersion: v1\nkind: ConfigMap\ndata:\n  config.yaml: |\n    a: 1\n    b: 2\nlist:\n  - name: x\n    v: "y"\n',
    );
  });

  it('writes keys in canonical order as it goes (toYaml), leaving out undefined values', () => {
    expect(
      toYaml({
        spec: { z: 1, name: 'n', a: [{ v: 1, name: 'x', gone: undefined }] },
        metadata: { labels: { b: '1', a: '2' }, name: 'm' },
        kind: 'K',
        empty: { gone: undefined },
        apiVersion: 'v1',
      }),
    ).toBe(
      'apiVersion: v1\nkind: K\nmetadata:\n  name: m\n  labels:\n    a: "2"\n    b: "1"\nempty: {}\n' +
        'spec:\n  name: "n"\n  a:\n    - name: x\n      v: 1\n  z: 1\n',
    );
  });
});
