import { setTimeout as sleep } from 'node:timers/promises';
import { Command, Flags } from '@oclif/core';
import { exitCodeOf, isScaleAgentError } from '../../shared/errors.js';
import { collectFleet, type FleetStatus } from '../status/fleet.js';
import { renderFleet } from '../status/render.js';

export default class Status extends Command {
  static override description =
    'Shows the fleet as a plugin-server sees it: agents (version, zone, connected for, accounts, standby), accounts ' +
    '(state, agent, replica holding it, objects cached, change→cache lag of the latest change, initial sync ' +
    'progress, errors) and pending operations. Exit code 0 when healthy, ' +
    '1 when something is not (server not ready, an account ORPHANED or FAILED or missing kinds, an account ' +
    'rejected), 2 when it refuses the token, 3 when it cannot be reached; usable in CI and cron. Filters narrow what is shown and judged.';
  static override enableJsonFlag = true;
  static override examples = [
    '<%= config.bin %> status --url http://plugin-server:7002 --token "$TOKEN"',
    '<%= config.bin %> status --url http://localhost:7002 --watch',
    '<%= config.bin %> status --url http://localhost:7002 --state ORPHANED --json',
    '<%= config.bin %> status --url http://localhost:7002 --account "prod-*"',
  ];
  static override flags = {
    url: Flags.string({
      description: "The plugin-server's REST base URL.",
      env: 'SCALE_AGENT_URL',
      default: 'http://127.0.0.1:7002',
    }),
    token: Flags.string({ description: 'A REST token with read scope (http.auth).', env: 'SCALE_AGENT_TOKEN' }),
    account: Flags.string({ description: 'Only accounts whose name matches (`*` matches any characters).' }),
    agent: Flags.string({ description: 'Only this agent id and its accounts.' }),
    state: Flags.string({ description: 'Only accounts in this state.', options: ['ACTIVE', 'ORPHANED', 'FAILED'] }),
    watch: Flags.boolean({ description: 'Redraw every --interval seconds until interrupted.', default: false }),
    interval: Flags.integer({ description: 'Seconds between redraws with --watch.', default: 2, min: 1 }),
  };
  static override summary = 'Show agents, accounts and pending operations of a plugin-server.';

  async run(): Promise<FleetStatus | { error: string; code: string }> {
    const { flags } = await this.parse(Status);
    const filter = { account: flags.account, agent: flags.agent, state: flags.state };
    if (flags.watch && !this.jsonEnabled()) {
      // Cursor home, the new frame, clear what is left below it: the screen is never blank between frames.
      for (;;) {
        let frame: string;
        try {
          frame = renderFleet(await collectFleet(flags.url, { token: flags.token, filter }));
        } catch (e) {
          frame = `${flags.url}: ${(e as Error).message}\n`;
        }
        process.stdout.write(`\x1b[H${frame.replace(/\n/g, '\x1b[K\n')}\x1b[J`);
        await sleep(flags.interval * 1000);
      }
    }
    try {
      const fleet = await collectFleet(flags.url, { token: flags.token, filter });
      if (!this.jsonEnabled()) process.stdout.write(renderFleet(fleet));
      if (fleet.problems.length) process.exitCode = 1;
      return fleet;
    } catch (e) {
      if (!isScaleAgentError(e)) throw e;
      this.logToStderr(`scale-agent status: ${e.message}`);
      process.exitCode = Math.max(2, exitCodeOf(e)); // 1 means unhealthy; not reading at all is worse
      return { error: e.message, code: e.code };
    }
  }
}
