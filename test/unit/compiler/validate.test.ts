import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTopology, loadYamlFile, parseYamlSource, validateLoaded } from '../../../src/compiler/index.js';
import { ScaleAgentError } from '../../../src/shared/errors.js';
import { ROOT, tempDir } from './_helpers.js';

const fixture = (name: string): string => join(ROOT, 'test/unit/compiler/fixtures/invalid', name);

async function errorsOf(file: string): Promise<{ line?: number; path?: string; message: string }[]> {
  const v = validateLoaded(await loadYamlFile(file));
  expect(v.ok).toBe(false);
  return v.errors.map((e) => ({ line: e.line, path: e.path, message: e.message, file: e.file }));
}

describe('topology validation', () => {
  it.each(['service', 'infrastructure', 'agent', 'mixed'])('accepts examples/%s.yaml', async (name) => {
    const { topology } = await loadTopology(join(ROOT, 'examples', `${name}.yaml`));
    expect(topology.name).toBe(name);
    expect(topology.agents.length).toBeGreaterThan(0);
  });

  it('reports every schema error at once, located by line and JSON path', async () => {
    const errors = await errorsOf(fixture('schema-errors.txt'));
    expect(errors.map((e) => [e.line, e.path])).toEqual([
      [4, '/metadata/name'],
      [6, '/pluginServer/storage/type'],
      [8, '/pluginServer/grpc/exposure/provider'],
      [9, '/pluginServer/bogus'],
      [12, '/agents/0/mode'],
      [15, '/agents/0/accounts/0/kubeconfigSecret'],
    ]);
    expect(errors[1]?.message).toBe('must be one of: "memory", "mysql", "postgres"');
    expect(errors[3]?.message).toBe("unknown property 'bogus'");
    expect(errors[5]?.message).toBe("missing required property 'key'");
    for (const e of errors) expect((e as { file?: string }).file).toBe(fixture('schema-errors.txt'));
  });

  it('reports every semantic error at once, naming both places of a duplicate', async () => {
    const errors = await errorsOf(fixture('semantic-errors.txt'));
    const byPath = new Map(errors.map((e) => [e.path, e]));
    expect(errors.map((e) => e.path)).toEqual([
      '/pluginServer/replicas',
      '/agents/0/mode',
      '/agents/0/accounts',
      '/agents/0/accounts/0',
      '/agents/0/accounts/0/kubeconfigSecret',
      '/agents/0/accounts/0/omitNamespaces',
      '/agents/1/accounts/0',
      '/agents/1/accounts/0/name',
      '/agents/1/accounts/0/serviceAccount',
      '/agents/1/accounts/0/kinds/1',
      '/agents/1/accounts/0/omitKinds',
      '/agents/1/accounts/0/permissions/WRITE',
      '/agents/2/name',
      '/agents/2/mode',
    ]);
    expect(byPath.get('/agents/1/accounts/0/name')?.message).toBe(
      "account name 'prod' is already used at /agents/0/accounts/0/name (line 11)",
    );
    expect(byPath.get('/agents/1/accounts/0/name')?.line).toBe(20);
    expect(byPath.get('/agents/2/name')?.message).toContain("'core' is already used at /agents/1/name (line 17)");
    expect(byPath.get('/agents/1/accounts/0/kinds/1')?.message).toContain("unknown kind 'Widget'");
    expect(byPath.get('/agents/0/accounts')?.message).toContain('exactly one account');
  });

  it('refuses duplicate keys with their position', async () => {
    await expect(loadYamlFile(fixture('duplicate-keys.txt'))).rejects.toMatchObject({
      code: 'SA_ERR_INVALID_INPUT',
      details: [{ line: 5, column: 3, message: "duplicate key 'name'" }],
    });
  });

  it('refuses an alias bomb quickly', async () => {
    const err = await loadYamlFile(fixture('alias-bomb.txt')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScaleAgentError);
    expect((err as ScaleAgentError).code).toBe('SA_ERR_INPUT_TOO_LARGE');
    expect((err as ScaleAgentError).message).toMatch(/alias/);
  });

  it('refuses files over the size limit before reading them', async () => {
    await using tmp = await tempDir();
    const file = join(tmp.dir, 'big.yaml');
    await writeFile(file, `# ${'x'.repeat(2048)}\napiVersion: scale-agent.io/v1alpha1\n`);
    await expect(loadYamlFile(file, { maxBytes: 1024 })).rejects.toMatchObject({ code: 'SA_ERR_INPUT_TOO_LARGE' });
    await expect(loadYamlFile(join(tmp.dir, 'missing.yaml'))).rejects.toMatchObject({ code: 'SA_ERR_FILE_UNREADABLE' });
  });

  it('names what is wrong with a path that is not a topology file: missing, directory, binary, empty, scalar', async () => {
    await using tmp = await tempDir();
    const unreadable = (file: string, message: string) => ({
      code: 'SA_ERR_FILE_UNREADABLE',
      message: `cannot read ${file}: ${message}`,
      details: [{ file, message }],
    });
    const missing = join(tmp.dir, 'missing.yaml');
    await expect(loadYamlFile(missing)).rejects.toMatchObject(unreadable(missing, 'no such file'));
    await expect(loadYamlFile(tmp.dir)).rejects.toMatchObject(unreadable(tmp.dir, 'is a directory, not a file'));
    const binary = join(tmp.dir, 'binary.yaml');
    await writeFile(binary, Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00]));
    await expect(loadYamlFile(binary)).rejects.toMatchObject(
      unreadable(binary, 'is not a UTF-8 text file (binary content?)'),
    );
    const latin1 = join(tmp.dir, 'latin1.yaml');
    await writeFile(latin1, Buffer.from('name: caf\xe9\n', 'latin1'));
    await expect(loadYamlFile(latin1)).rejects.toMatchObject({ code: 'SA_ERR_FILE_UNREADABLE' });

    const empty = join(tmp.dir, 'empty.yaml');
    await writeFile(empty, '# only a comment\n');
    expect(await errorsOf(empty)).toEqual([
      {
        file: empty,
        path: '/',
        line: undefined,
        message: 'the file is empty: a topology starts with apiVersion: scale-agent.io/v1alpha1 and kind: Topology',
      },
    ]);
    const list = join(tmp.dir, 'list.yaml');
    await writeFile(list, '- a\n- b\n');
    expect((await errorsOf(list))[0]).toMatchObject({
      line: 1,
      path: '/',
      message: expect.stringMatching(/^the file holds a list, not a YAML mapping/),
    });
  });

  it('refuses pathologically deep nesting without crashing', () => {
    const deep = '['.repeat(200_000) + ']'.repeat(200_000);
    const err = (() => {
      try {
        parseYamlSource(deep, 'deep.yaml');
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ScaleAgentError);
  });

  it('reports YAML syntax errors with positions', async () => {
    await expect(loadYamlFile(fixture('not-yaml.txt'))).rejects.toMatchObject({
      code: 'SA_ERR_INVALID_INPUT',
      details: [{ line: 4 }, { line: 5 }],
    });
  });

  it('applies defaults once', () => {
    const src = parseYamlSource(
      'apiVersion: scale-agent.io/v1alpha1\nkind: Topology\nmetadata: {name: d}\npluginServer: {}\nagents:\n' +
        '  - {name: a, mode: service, accounts: [{name: x, kubeconfigSecret: {name: k, key: x}}]}\n',
      'd.yaml',
    );
    const v = validateLoaded(src);
    expect(v.errors).toEqual([]);
    const t = v.topology;
    expect(t?.pluginServer).toMatchObject({
      namespace: 'scale-agent',
      replicas: 1,
      grpcPort: 9091,
      exposure: { type: 'ClusterIP' },
      storage: { type: 'memory' },
      tls: { mode: 'mtls', certificates: { source: 'generate', validityDays: 825 } },
    });
    expect(t?.pluginServer.image).toMatch(/^ghcr\.io\/scale-agent\/scale-agent:\d+\.\d+\.\d+/);
    expect(t?.agents[0]).toMatchObject({ namespace: 'scale-agent', replicas: 1 });
    expect(t?.agents[0]?.accounts[0]).toMatchObject({ access: 'read-write', namespaces: [], rbac: { create: true } });
  });
});
