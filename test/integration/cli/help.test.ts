import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run } from '../../infra/index.js';

const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));
const cli = (args: string[]) => run(process.execPath, [bin, ...args]);

// The commands a user of this build has.
const COMMANDS = ['agent', 'certs', 'check', 'kubeconfig', 'plugin-server', 'status', 'synth', 'validate', 'version'];
// Commands under a topic (`scale-agent accounts ...`), listed under TOPICS.
const TOPIC_COMMANDS = ['accounts migrate'];

describe('scale-agent --help', () => {
  it('lists every command with its summary', async () => {
    const { stdout } = await cli(['--help']);
    const listed = [...stdout.split('COMMANDS')[1]!.matchAll(/^ {2}([a-z-]+) {2,}\S/gm)].map((m) => m[1]);
    expect(listed).toEqual(COMMANDS);
    const topics = [
      ...stdout
        .split('TOPICS')[1]!
        .split('COMMANDS')[0]!
        .matchAll(/^ {2}([a-z-]+) {2,}\S/gm),
    ];
    expect(topics.map((m) => m[1])).toEqual([...new Set(TOPIC_COMMANDS.map((c) => c.split(' ')[0]))]);
  });

  it.each([...COMMANDS, ...TOPIC_COMMANDS])(
    '%s --help has a description and at least one example of itself',
    async (command) => {
      const { stdout } = await cli([...command.split(' '), '--help']);
      expect(stdout).toMatch(/^DESCRIPTION\n {2}\S/m);
      const examples = stdout.split(/^EXAMPLES\n/m)[1] ?? '';
      expect(examples).toContain(`$ scale-agent ${command}`);
    },
  );

  it('version --json is machine-readable', async () => {
    const { stdout } = await cli(['version', '--json']);
    expect(JSON.parse(stdout)).toMatchObject({ name: 'scale-agent', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });
});
