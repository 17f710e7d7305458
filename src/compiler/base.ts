import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { packageRoot } from './_package-root.js';
import type { Obj } from './serialize.js';

export type BaseComponent = 'plugin-server' | 'agent';

/** kustomize/base as files (copied verbatim into the output) and as the objects each component's kustomization lists. */
export interface BaseBundle {
  files: Record<string, string>;
  resources: Record<BaseComponent, Obj[]>;
}

export async function loadBase(dir = join(packageRoot(), 'kustomize', 'base')): Promise<BaseBundle> {
  const files: Record<string, string> = {};
  const walk = async (d: string): Promise<void> => {
    for (const e of (await readdir(d, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else files[relative(dir, p).split('\\').join('/')] = await readFile(p, 'utf8');
    }
  };
  await walk(dir);
  const component = (name: BaseComponent): Obj[] => {
    const k = parse(files[`${name}/kustomization.yaml`] ?? '') as { resources?: string[] } | null;
    return (k?.resources ?? []).flatMap((r) =>
      parseAllDocuments(files[`${name}/${r}`] ?? '').map((d) => d.toJS() as Obj),
    );
  };
  return { files, resources: { 'plugin-server': component('plugin-server'), agent: component('agent') } };
}
