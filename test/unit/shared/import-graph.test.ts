import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The import graph of src/, type-only imports included, read with the TypeScript compiler's own pre-processor. The
 * eslint boundaries (eslint.config.js) forbid a runtime to name another's folder; this checks what the agent
 * actually loads, however indirectly, and that no module depends on itself.
 */
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../../src');
const rel = (file: string): string => relative(SRC, file);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const deps = importedFiles
      .filter((i) => i.fileName.startsWith('.'))
      .map((i) => resolve(dirname(file), i.fileName.replace(/\.js$/, '.ts')))
      .filter((target) => existsSync(target));
    graph.set(file, deps);
  }
  return graph;
}

function reachable(graph: Map<string, string[]>, roots: string[]): Set<string> {
  const seen = new Set<string>();
  const stack = [...roots];
  for (let file = stack.pop(); file !== undefined; file = stack.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    stack.push(...(graph.get(file) ?? []));
  }
  return seen;
}

/** Strongly connected components of more than one module (Tarjan), as paths relative to src/. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(rel(w));
    } while (w !== v);
    if (component.length > 1) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const PARSER = join(SRC, 'plugin-server/api/descriptions/parse.ts');

describe('import graph of src/', () => {
  const graph = importGraph();

  it('the agent loads only its own modules, src/shared, the protocol and its CLI command: not the parser', () => {
    expect(existsSync(PARSER)).toBe(true);
    const agentRoots = [...graph.keys()].filter(
      (f) => rel(f).startsWith('agent/') || rel(f) === 'cli/commands/agent.ts',
    );
    expect(agentRoots.length).toBeGreaterThan(20);
    const loaded = [...reachable(graph, agentRoots)].map(rel);
    expect(loaded).not.toContain(rel(PARSER));
    expect(loaded.filter((f) => !/^(agent|shared|proto|cli)\//.test(f))).toEqual([]);
    expect(loaded.filter((f) => f.startsWith('cli/')).sort()).toEqual([
      'cli/commands/agent.ts',
      'cli/config-flag.ts',
      'cli/serve.ts',
    ]);
  });

  it('the plugin-server reaches the parser (the check above would pass vacuously otherwise)', () => {
    expect([...reachable(graph, [join(SRC, 'plugin-server/server.ts')])].map(rel)).toContain(rel(PARSER));
  });

  it('has no import cycle', () => {
    expect(cycles(graph)).toEqual([]);
  });

  /** Edges from files under `from` to files under `to` (folders relative to src/), as "importer → imported". */
  const edges = (from: string, to: string): string[] =>
    [...graph].flatMap(([file, deps]) =>
      rel(file).startsWith(from)
        ? deps.filter((d) => rel(d).startsWith(to)).map((d) => `${rel(file)} → ${rel(d)}`)
        : [],
    );

  it('the REST layer uses the views, never the other way round', () => {
    expect(edges('plugin-server/api/', 'plugin-server/views/').length).toBeGreaterThan(0);
    expect(edges('plugin-server/views/', 'plugin-server/api/')).toEqual([]);
  });

  it('the cache and ingest know nothing of the views or the REST layer that read them', () => {
    for (const layer of ['plugin-server/cache/', 'plugin-server/ingest/']) {
      expect(edges(layer, 'plugin-server/views/')).toEqual([]);
      expect(edges(layer, 'plugin-server/api/')).toEqual([]);
    }
  });
});
