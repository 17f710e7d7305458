import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run } from '../../infra/index.js';

const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));
const cli = (args: string[]) => run(process.execPath, [bin, ...args]);

// The commands a user of this build has.
const COMMANDS = ['agent', 'certs', 'check', 'plugin-server', 'status', 'synth', 'validate', 'version'];

describe('scale-agent --help', () => {
  it('lists every command with its summary', async () => {
    const { stdout } = await cli(['--help']);
    const listed = [...stdout.split('COMMANDS')[1]!.matchAll(/^ {2}([a-z-]+) {2,}\S/gm)].map((m) => m[1]);
    expect(listed).toEqual(COMMANDS);
  });

  it.each(COMMANDS)('%s --help has a description and at least one example of itself', async (command) => {
    const { stdout } = await cli([command, '--help']);
    expect(stdout).toMatch(/^DESCRIPTION\n {2}\S/m);
    const examples = stdout.split(/^EXAMPLES\n/m)[1] ?? '';
    expect(examples).toContain(`$ scale-agent ${command}`);
  });

  it('version --json is machine-readable', async () => {
    const { stdout } = await cli(['version', '--json']);
    expect(JSON.parse(stdout)).toMatchObject({ name: 'scale-agent', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });
});
