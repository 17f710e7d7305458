import { Command } from '@oclif/core';
import { configFlag } from '../config-flag.js';
import { serveUntilSignal } from '../serve.js';

export default class PluginServerCommand extends Command {
  static override summary = 'Run the plugin-server: terminate agent streams, cache every cluster, serve the REST API.';
  static override description =
    'Reads the plugin-server config (schemas/plugin-server-config.schema.json), listens for agents on gRPC ' +
    '(grpc.host:grpc.port; also grpc.health.v1 and server reflection) and serves the Clouddriver-compatible REST ' +
    'API, the /armory admin API, /healthz, /readyz and /metrics on http.host:http.port. Several --config files (or ' +
    'a directory of them) are merged in order, later over earlier (docs/config-overlays.md). The cache lives in memory ' +
    '(default) or MySQL (storage.type: mysql; schema created and migrated at startup). The grpc.tls files are ' +
    'reloaded when they change (a renewed Secret), without dropping open agent streams. Logs are JSON lines on ' +
    'stderr. SIGTERM/SIGINT stop it cleanly: agent streams are closed so agents reconnect elsewhere.';
  static override examples = ['<%= config.bin %> plugin-server --config /etc/scale-agent/plugin-server.yaml'];
  static override flags = {
    config: configFlag(
      'Plugin-server config file (YAML), or a directory of them; repeat to merge several, later over earlier.',
      'SCALE_AGENT_PLUGIN_SERVER_CONFIG',
    ),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(PluginServerCommand);
    // Imported on use: oclif loads every command module to list them, and an agent process should not carry
    // the server (fastify, mysql2, ...) in its memory.
    const {
      loadPluginServerConfig,
      resolvePluginServerSecrets,
      PluginServer: Server,
    } = await import('../../plugin-server/index.js');
    const { configFiles } = await import('../../shared/yaml-config.js');
    await serveUntilSignal(this, async () => {
      const server = new Server(await resolvePluginServerSecrets(loadPluginServerConfig(configFiles(flags.config))));
      await server.start();
      return server;
    });
  }
}
