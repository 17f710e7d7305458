import { Command, Flags } from '@oclif/core';
import { accountsFromClouddriver, namePattern, type SourceAccount } from '../../../shared/clouddriver-accounts.js';
import { formatDetail, isScaleAgentError, ScaleAgentError } from '../../../shared/errors.js';
import { migrateAccounts, renderMigration, type MigrationSummary } from '../../accounts/migrate.js';
import { accountsFromFile } from '../../accounts/source.js';

export default class AccountsMigrate extends Command {
  static override summary = "Copy Clouddriver's Kubernetes accounts into a plugin-server as dynamic accounts.";
  static override description =
    'Reads Kubernetes account definitions from a Clouddriver/Halyard-style YAML file (--file: kubernetes.accounts[] ' +
    'or providers.kubernetes.accounts[]) or from a running Clouddriver (--clouddriver-url: its ' +
    'GET /credentials?expand=true), keeps those whose whole name matches --pattern, and creates or updates them on ' +
    'the plugin-server as dynamic accounts through POST /armory/accounts. New accounts are INACTIVE (nothing ' +
    'watches them yet) unless --state ACTIVE; activate them later with PATCH /armory/accounts. Running it again ' +
    'with the same input changes nothing. --dry-run asks the plugin-server what it would create, update or leave ' +
    'and changes nothing.\n\n' +
    "Clouddriver's /credentials does not show kubeconfig files; give --kubeconfig-file (`{name}` is replaced by the " +
    'account name) for accounts without one. Keys with no equivalent here (cachingPolicies, dockerRegistries, ...) ' +
    'are listed as ignored.\n\n' +
    'Exit codes: 0 every matching account created, updated or unchanged; 1 some refused (a name configured on an ' +
    'agent, an invalid definition: each is named); 2 bad input (unreadable file, with its line; bad --pattern; a ' +
    'refused token); 3 the plugin-server or Clouddriver cannot be reached.';
  static override enableJsonFlag = true;
  static override examples = [
    {
      description: 'See what would happen, changing nothing:',
      command:
        '<%= config.bin %> accounts migrate --file clouddriver-local.yml --pattern "prod-.*" --url http://plugin-server:7002 --token "$TOKEN" --dry-run',
    },
    {
      description: 'Migrate every account of a running Clouddriver, kubeconfigs mounted on the agents by name:',
      command:
        '<%= config.bin %> accounts migrate --clouddriver-url http://spin-clouddriver:7002 --kubeconfig-file "/kubeconfigs/{name}.yaml" --url http://plugin-server:7002 --token "$TOKEN"',
    },
    {
      description: 'Migrate and activate at once, pinned to the agents of one zone, as JSON for a script:',
      command:
        '<%= config.bin %> accounts migrate --file halconfig.yml --pattern "eu-.*" --zone eu-west --state ACTIVE --url http://localhost:7002 --json',
    },
  ];
  static override flags = {
    file: Flags.string({
      description: 'A Clouddriver (clouddriver.yml) or Halyard (config) YAML file with kubernetes.accounts[].',
      exactlyOne: ['file', 'clouddriver-url'],
    }),
    'clouddriver-url': Flags.string({
      description:
        'A Clouddriver base URL; its GET /credentials?expand=true is read. Only kubernetes accounts are taken.',
      exactlyOne: ['file', 'clouddriver-url'],
    }),
    pattern: Flags.string({
      description: 'A regular expression the whole account name must match (default: every account).',
    }),
    url: Flags.string({
      description: "The plugin-server's REST base URL.",
      env: 'SCALE_AGENT_URL',
      default: 'http://127.0.0.1:7002',
    }),
    token: Flags.string({ description: 'A REST token with admin scope (http.auth).', env: 'SCALE_AGENT_TOKEN' }),
    'dry-run': Flags.boolean({ description: 'Print what would be created, updated or skipped; change nothing.' }),
    zone: Flags.string({ description: 'zoneId for accounts that have none: only agents of that zone may serve them.' }),
    state: Flags.string({
      description: 'State of the accounts created (existing ones keep theirs unless their definition says).',
      options: ['ACTIVE', 'INACTIVE'],
    }),
    'kubeconfig-file': Flags.string({
      description: 'kubeconfigFile, as the agent sees it, for accounts with none; `{name}` becomes the account name.',
    }),
  };

  async run(): Promise<MigrationSummary | { error: string; code: string }> {
    const { flags } = await this.parse(AccountsMigrate);
    try {
      let pattern: RegExp | undefined;
      if (flags.pattern !== undefined) {
        try {
          pattern = namePattern(flags.pattern);
        } catch (e) {
          throw new ScaleAgentError('INVALID_INPUT', `--pattern: not a regular expression: ${(e as Error).message}`);
        }
      }
      const source: SourceAccount[] = flags.file
        ? accountsFromFile(flags.file)
        : await accountsFromClouddriver(flags['clouddriver-url']!);
      const summary = await migrateAccounts(source, {
        url: flags.url,
        token: flags.token,
        pattern,
        dryRun: flags['dry-run'],
        zoneId: flags.zone,
        state: flags.state as 'ACTIVE' | 'INACTIVE' | undefined,
        kubeconfigFile: flags['kubeconfig-file'],
      });
      if (!this.jsonEnabled()) process.stdout.write(renderMigration(summary));
      if (summary.counts.refuse > 0) process.exitCode = 1;
      return summary;
    } catch (e) {
      if (!isScaleAgentError(e)) throw e;
      this.logToStderr(`scale-agent accounts migrate: ${e.message}`);
      for (const d of e.details) if (d.file) this.logToStderr(`  ${formatDetail(d)}`);
      process.exitCode = e.kind === 'UNAVAILABLE' || e.kind === 'TIMEOUT' ? 3 : 2;
      return { error: e.message, code: e.code };
    }
  }
}
