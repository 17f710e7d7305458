import { Command } from '@oclif/core';
import { configFlag } from '../config-flag.js';
import { serveUntilSignal } from '../serve.js';

export default class AgentCommand extends Command {
  static override summary = 'Run the agent: watch Kubernetes accounts and stream every change to the plugin-server.';
  static override description =
    'Reads the agent config (schemas/agent-config.schema.json), lists and watches every configured account, and ' +
    'streams changes over one outbound gRPC stream. Several --config files (or a directory of them) are merged in ' +
    'order, later over earlier, accounts by name (docs/config-overlays.md). Each file is reloaded when it ' +
    'changes (also a ' +
    "ConfigMap's ..data symlink swap): accounts are added, changed or removed without a restart. Admin " +
    'endpoints (/healthz, /readyz, /metrics, /accounts, /watches, /version) listen on admin.host:admin.port; ' +
    'with health.port set, /healthz and /readyz alone also listen on health.host:health.port (for kubelet probes). ' +
    'Logs are JSON lines on stderr. SIGTERM/SIGINT stop it cleanly.';
  static override examples = [
    '<%= config.bin %> agent --config /etc/scale-agent/agent.yaml',
    '<%= config.bin %> agent --config /opt/armory/config/armory-agent.yml --config /opt/armory/config/armory-agent-local.yaml',
    '<%= config.bin %> agent --config /etc/scale-agent/',
  ];
  static override flags = {
    config: configFlag(
      'Agent config file (YAML), or a directory of them; repeat to merge several, later over earlier.',
      'SCALE_AGENT_CONFIG',
    ),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(AgentCommand);
    // Imported on use: oclif loads every command module to list them, and the agent is not needed for that.
    const { Agent: AgentRuntime } = await import('../../agent/index.js');
    await serveUntilSignal(this, () => AgentRuntime.start({ configFile: flags.config }));
  }
}
