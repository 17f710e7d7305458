import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../infra/index.js';

// Real CLI processes from the build (`npm test` builds first), as an operator or a CI job runs them.
const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));
const example = fileURLToPath(new URL('../../../examples/mixed.yaml', import.meta.url));
const cli = (args: string[]) => run(process.execPath, [bin, ...args], { allowFail: true });

/** What a raw Node error or an oclif crash looks like; none of it may reach the user for bad input. */
const RAW = /\bE(NOENT|ISDIR|NOTDIR|ACCES)\b|^\s+at |Error: /m;

let dir: string;
const inputs: Record<string, { path: () => string; says: RegExp }> = {
  'a missing file': { path: () => join(dir, 'missing.yaml'), says: /no such file/ },
  'an empty file': { path: () => join(dir, 'empty.yaml'), says: /the file is empty/ },
  'a comment-only file': { path: () => join(dir, 'comments.yaml'), says: /the file is empty/ },
  'a directory': { path: () => join(dir, 'a-directory'), says: /is a directory, not a file/ },
  'a binary file': { path: () => join(dir, 'image.yaml'), says: /not a UTF-8 text file/ },
  'a file that is not UTF-8': { path: () => join(dir, 'latin1.yaml'), says: /not a UTF-8 text file/ },
  'a plain scalar': { path: () => join(dir, 'scalar.yaml'), says: /holds a single string value, not a YAML mapping/ },
  'a huge file': { path: () => join(dir, 'huge.yaml'), says: /is 9437191 bytes; the limit is 8388608 bytes/ },
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cli-input-'));
  writeFileSync(join(dir, 'empty.yaml'), '');
  writeFileSync(join(dir, 'comments.yaml'), '# nothing here yet\n\n');
  mkdirSync(join(dir, 'a-directory'));
  writeFileSync(join(dir, 'image.yaml'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]));
  writeFileSync(join(dir, 'latin1.yaml'), Buffer.from('name: caf\xe9\n', 'latin1'));
  writeFileSync(join(dir, 'scalar.yaml'), 'just some words\n');
  writeFileSync(join(dir, 'huge.yaml'), `name: ${'a'.repeat(9 * 1024 * 1024)}\n`);
});

// Each case is its own short-lived process, independent of the others: run them side by side.
describe.concurrent.each(['validate', 'check', 'synth'])('scale-agent %s on bad input', (command) => {
  it.for(Object.keys(inputs))('%s: exit 1, a message naming the file, nothing written', async (name, { expect }) => {
    const { path, says } = inputs[name] as { path: () => string; says: RegExp };
    const out = join(dir, `out-${command}-${name.replaceAll(' ', '-')}`);
    const r = await cli([command, path(), ...(command === 'synth' ? ['--out', out] : [])]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(path());
    expect(r.stderr).toMatch(says);
    expect(r.stderr).not.toMatch(RAW);
    expect(r.stdout).toBe('');
    expect(existsSync(out)).toBe(false);
  });

  it('--json: one parseable object with ok false and the located error, exit 1', async ({ expect }) => {
    const path = join(dir, 'a-directory');
    const r = await cli([command, path, ...(command === 'synth' ? ['--out', join(dir, 'json-out')] : []), '--json']);
    expect(r.code).toBe(1);
    const body = JSON.parse(r.stdout) as { ok: boolean; errors: { file: string; message: string }[] };
    expect(body.ok).toBe(false);
    expect(body.errors).toEqual([{ file: path, message: 'is a directory, not a file' }]);
  });
});

describe('scale-agent synth --out / --certs-dir that cannot be directories', () => {
  it('--out naming an existing file: exit 1, a message naming it, the file untouched and nothing else written', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'cli-out-'));
    const file = join(parent, 'deploy');
    writeFileSync(file, 'keep me\n');
    const r = await cli(['synth', example, '--out', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`--out ${file} is a file, not a directory; nothing was written`);
    expect(r.stderr).not.toMatch(RAW);
    expect(readFileSync(file, 'utf8')).toBe('keep me\n');
    expect(readdirSync(parent)).toEqual(['deploy']);
  });

  it('--out below an existing file names the file in the way', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'cli-out-'));
    writeFileSync(join(parent, 'deploy'), 'keep me\n');
    const out = join(parent, 'deploy', 'prod');
    const r = await cli(['synth', example, '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`--out ${out} cannot be created: ${join(parent, 'deploy')} is a file`);
    expect(r.stderr).not.toMatch(RAW);
    expect(readdirSync(parent)).toEqual(['deploy']);
  });

  it('--certs-dir naming a file: refused before --out is created or any certificate issued', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'cli-out-'));
    writeFileSync(join(parent, 'certs'), 'not a directory\n');
    const r = await cli(['synth', example, '--out', join(parent, 'out'), '--certs-dir', join(parent, 'certs')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`--certs-dir ${join(parent, 'certs')} is a file, not a directory`);
    expect(readdirSync(parent)).toEqual(['certs']);
  });

  it('a valid run into a fresh directory still works (exit 0, summary.json written)', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'cli-out-')), 'deploy');
    const r = await cli(['synth', example, '--out', out]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { places: { name: string }[] };
    expect(summary.places.map((p) => p.name)).toContain('plugin-server');
  });
});
