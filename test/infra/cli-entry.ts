/**
 * Runs the scale-agent CLI from source (under tsx) for tests: the same oclif commands as bin/run.js, without a
 * build. Usage: node --import tsx test/infra/cli-entry.ts <command> [flags].
 */
import AgentCommand from '../../src/cli/commands/agent.js';
import KubeconfigCommand from '../../src/cli/commands/kubeconfig.js';
import PluginServerCommand from '../../src/cli/commands/plugin-server.js';

const commands: Record<string, { run(argv: string[], opts?: string): Promise<unknown> }> = {
  agent: AgentCommand,
  kubeconfig: KubeconfigCommand,
  'plugin-server': PluginServerCommand,
};

const [name, ...argv] = process.argv.slice(2);
const command = name ? commands[name] : undefined;
if (!command) {
  console.error(`usage: cli-entry.ts <${Object.keys(commands).join('|')}> [flags]`);
  process.exit(2);
}
await command.run(argv, import.meta.url);
