import { Command } from '@oclif/core';
import { versionInfo } from '../../shared/version.js';

export default class Version extends Command {
  static override summary = 'Print the scale-agent version.';
  static override description =
    'Prints the version of this scale-agent build and the Node.js runtime it runs on. With --json the same ' +
    'facts come as one JSON object, for scripts and bug reports.';
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json'];
  static override enableJsonFlag = true;

  async run(): Promise<ReturnType<typeof versionInfo>> {
    const info = versionInfo();
    this.log(`${info.name} ${info.version} (node ${info.node}, ${info.platform}-${info.arch})`);
    return info;
  }
}
