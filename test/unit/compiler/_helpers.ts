import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadTopologySource } from '../../../src/compiler/index.js';
import { ensureTopologyCerts } from '../../../src/compiler/certs.js';
import { ensureTopologySecrets } from '../../../src/compiler/generated-secrets.js';
import { synthesize, type SynthResult } from '../../../src/compiler/synth.js';

export const ROOT = new URL('../../../', import.meta.url).pathname;

export async function tempDir(
  prefix = 'scale-agent-test-',
): Promise<{ dir: string; [Symbol.asyncDispose](): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, [Symbol.asyncDispose]: () => rm(dir, { recursive: true, force: true }) };
}

/** Synthesizes YAML text with certificates and generated secrets in `certsDir`. */
export async function synthText(text: string, certsDir: string): Promise<SynthResult> {
  const { topology } = loadTopologySource(text, 'inline.yaml');
  const certs = await ensureTopologyCerts(topology, certsDir);
  const { secrets } = await ensureTopologySecrets(topology, certsDir);
  return synthesize(topology, { version: '0.1.0', secrets, ...(certs ? { tls: certs.material } : {}) });
}

/** A Topology document named `name`: the header, then `body` (its pluginServer, agents and the rest, as YAML). */
export const topology = (name: string, body: string): string =>
  `apiVersion: scale-agent.io/v1alpha1\nkind: Topology\nmetadata: { name: ${name} }\n${body.replace(/^\n/, '')}`;

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
};

export function docs(yamlText: string): K8sObject[] {
  return parseAllDocuments(yamlText)
    .map((d) => d.toJS() as K8sObject)
    .filter((d) => d !== null);
}

export function find(objs: K8sObject[], kind: string, name: string, namespace?: string): K8sObject {
  const o = objs.find(
    (x) =>
      x.kind === kind && x.metadata.name === name && (namespace === undefined || x.metadata.namespace === namespace),
  );
  if (!o)
    throw new Error(
      `${kind} ${namespace ?? ''}/${name} not found in ${objs.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`,
    );
  return o;
}

export const MINIMAL = `
apiVersion: scale-agent.io/v1alpha1
kind: Topology
metadata: { name: t }
pluginServer:
  namespace: cp
agents:
  - name: core
    mode: service
    accounts:
      - name: prod
        kubeconfigSecret: { name: kc, key: prod }
        namespaces: [web, api]
        access: read-only
      - name: ops
        kubeconfigSecret: { name: kc, key: ops }
        permissions: { READ: [ops], WRITE: [ops] }
`;
