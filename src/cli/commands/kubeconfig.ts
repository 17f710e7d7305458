import { homedir } from 'node:os';
import { join } from 'node:path';
import { Args, Command, Flags } from '@oclif/core';
import { stringify } from 'yaml';
import { exitCodeOf, formatDetail, isScaleAgentError } from '../../shared/errors.js';
import { parseDuration } from '../kubeconfig/duration.js';
import { mintKubeconfig, type MintResult } from '../kubeconfig/mint.js';

const DEFAULT_DURATION = '8760h';

export default class Kubeconfig extends Command {
  static override args = {
    file: Args.string({ description: 'Topology file (YAML).', required: true }),
  };
  static override summary = 'Mint the kubeconfig an agent uses for a service- or infrastructure-mode account.';
  static override description =
    "With the target cluster's admin kubeconfig, applies the account's ServiceAccount and RBAC there (the objects " +
    'synth writes for its account-<name> place), mints a token for that ServiceAccount, and writes a kubeconfig ' +
    '(--out) plus the manifest of the Secret the agent group mounts (--secret-out: the name, namespace and key the ' +
    "topology gives), to apply in the agent's cluster with the printed kubectl command.\n\n" +
    'The token is a TokenRequest lasting --duration (default 8760h; the API server may grant less, and the granted ' +
    "expiry is printed: mint again before it), or with --long-lived the ServiceAccount's token Secret, which never " +
    'expires until deleted. Every permission the run needs is checked first (SelfSubjectAccessReview): a caller ' +
    'short of one gets each missing permission named and nothing is changed; a server-side dry run of the objects ' +
    'then catches RBAC escalation refusals and missing namespaces, also before any change. --dry-run does both ' +
    'and prints what would be applied, changing nothing.\n\n' +
    'Exit codes: 0 written; 1 bad input, unknown or agent-mode account, missing permissions; 3 the cluster cannot ' +
    'be reached.';
  static override enableJsonFlag = true;
  static override examples = [
    {
      description: "Mint a one-year token for account prod-eu, with the target cluster's admin context:",
      command:
        '<%= config.bin %> kubeconfig topology.yaml --account prod-eu --kubeconfig ~/.kube/config --context prod-eu-admin --out prod-eu.kubeconfig',
    },
    {
      description: "A long-lived token Secret instead, and the API server's address as the agents reach it:",
      command:
        '<%= config.bin %> kubeconfig topology.yaml --account prod-eu --long-lived --server https://10.0.0.1:6443 --out prod-eu.kubeconfig',
    },
    {
      description: 'See what would be applied and whether the permissions suffice, changing nothing:',
      command: '<%= config.bin %> kubeconfig topology.yaml --account prod-eu --out prod-eu.kubeconfig --dry-run',
    },
  ];
  static override flags = {
    account: Flags.string({ char: 'a', summary: 'The account (agents[].accounts[].name).', required: true }),
    kubeconfig: Flags.file({
      summary: "The target cluster's admin kubeconfig. Default: $KUBECONFIG, else ~/.kube/config.",
    }),
    context: Flags.string({ summary: 'Context in --kubeconfig. Default: its current-context.' }),
    server: Flags.string({
      summary: "API server URL written into the kubeconfig. Default: the admin kubeconfig's.",
    }),
    duration: Flags.string({
      summary: `Lifetime of the TokenRequest token (8760h, 30d, 1h30m; at least 10m). Default: ${DEFAULT_DURATION}.`,
      exclusive: ['long-lived'],
    }),
    'long-lived': Flags.boolean({
      summary: "Use the ServiceAccount's long-lived token Secret (kubernetes.io/service-account-token).",
      exclusive: ['duration'],
    }),
    out: Flags.string({ char: 'o', summary: 'Where to write the kubeconfig.', required: true }),
    'secret-out': Flags.string({ summary: 'Where to write the Secret manifest. Default: OUT.secret.yaml.' }),
    'dry-run': Flags.boolean({ summary: 'Check permissions and print what would be applied; change nothing.' }),
  };

  async run(): Promise<MintResult | { ok: false; code: string; error: string }> {
    const { args, flags } = await this.parse(Kubeconfig);
    try {
      const token = flags['long-lived']
        ? ({ kind: 'long-lived' } as const)
        : ({ kind: 'request', seconds: parseDuration(flags.duration ?? DEFAULT_DURATION) } as const);
      const r = await mintKubeconfig({
        topologyFile: args.file,
        account: flags.account,
        kubeconfig: flags.kubeconfig ?? defaultKubeconfig(),
        ...(flags.context !== undefined ? { context: flags.context } : {}),
        ...(flags.server !== undefined ? { server: flags.server } : {}),
        token,
        out: flags.out,
        secretOut: flags['secret-out'] ?? `${flags.out}.secret.yaml`,
        dryRun: flags['dry-run'],
      });
      if (!this.jsonEnabled()) this.log(render(r));
      return r;
    } catch (e) {
      if (!isScaleAgentError(e)) throw e;
      process.exitCode = exitCodeOf(e);
      if (!this.jsonEnabled()) {
        for (const d of e.details) this.logToStderr(formatDetail(d));
        this.logToStderr(`scale-agent kubeconfig: ${e.message}`);
      }
      return { ok: false, code: e.code, error: e.message };
    }
  }
}

/** kubectl's default; a KUBECONFIG list takes its first file, where the admin context usually is. */
function defaultKubeconfig(): string {
  const env = process.env.KUBECONFIG?.split(process.platform === 'win32' ? ';' : ':').find((f) => f !== '');
  return env ?? join(homedir(), '.kube', 'config');
}

function render(r: MintResult): string {
  const lines = [
    `account ${r.account} (agent group ${r.agentGroup}, mode ${r.mode}): ServiceAccount ` +
      `${r.serviceAccount.namespace}/${r.serviceAccount.name} in ${r.cluster}${r.caller ? `, as ${r.caller}` : ''}`,
  ];
  const names = r.objects.map(
    (m) => `${m.kind} ${m.metadata.namespace ? `${m.metadata.namespace}/` : ''}${m.metadata.name}`,
  );
  if (r.dryRun) {
    lines.push('dry run: the permissions suffice; nothing was changed. Would apply:', '---');
    lines.push(r.objects.map((m) => stringify(m)).join('---\n'));
    lines.push(`would write the kubeconfig and Secret ${r.secret.namespace}/${r.secret.name} (key ${r.secret.key})`);
    return lines.join('\n');
  }
  lines.push(`applied: ${names.join(', ')}`);
  const t = r.token;
  if (t?.kind === 'TokenRequest') {
    const short =
      t.grantedSeconds < t.requestedSeconds - 60 ? ` (asked ${t.requestedSeconds} s; the API server capped it)` : '';
    lines.push(`token: TokenRequest, expires ${t.expiresAt}${short}; mint again before then`);
  } else if (t) {
    lines.push(`token: long-lived, from Secret ${r.serviceAccount.namespace}/${t.secret} (delete it to revoke)`);
  }
  if (r.kubeconfig)
    lines.push(`wrote ${r.kubeconfig.file} (context ${r.kubeconfig.context}, server ${r.kubeconfig.server})`);
  lines.push(
    `wrote ${r.secret.file}: Secret ${r.secret.namespace}/${r.secret.name}, key ${r.secret.key}`,
    `apply it in the agent's cluster: ${r.secret.apply}`,
  );
  return lines.join('\n');
}
