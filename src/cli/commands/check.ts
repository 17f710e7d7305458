import { Args, Command, Flags } from '@oclif/core';
import { POLICY_RULES, checkTopology, loadTopology, type CheckReport } from '../../compiler/index.js';
import { exitCodeOf, formatDetail, isScaleAgentError, type ErrorDetail } from '../../shared/errors.js';

export type CheckResult =
  | (CheckReport & { code?: undefined })
  | { ok: false; file: string; code: string; errors: ErrorDetail[] }
  | { rules: { id: string; name: string; severity: string; summary: string }[] };

export default class Check extends Command {
  static override args = {
    file: Args.string({ description: 'Topology file (YAML).', required: false }),
  };
  static override description =
    'Validates the topology, then applies policy rules meant for CI. Each rule has a stable id:\n' +
    POLICY_RULES.map((r) => `  ${r.id} ${r.name} (${r.severity}): ${r.summary}`).join('\n') +
    '\nExit code 1 when a rule of severity error (or, with --fail-on warning, any rule) is violated or the file is invalid.';
  static override enableJsonFlag = true;
  static override examples = [
    '<%= config.bin %> check topology.yaml',
    '<%= config.bin %> check topology.yaml --json --fail-on warning',
    '<%= config.bin %> check --list-rules',
  ];
  static override flags = {
    'fail-on': Flags.option({
      options: ['error', 'warning'] as const,
      default: 'error' as const,
      summary: 'Lowest severity that makes the exit code non-zero.',
    })(),
    'list-rules': Flags.boolean({ summary: 'Print the policy rules and exit.', default: false }),
  };
  static override summary = 'Check a topology against policy rules (for CI).';

  async run(): Promise<CheckResult> {
    const { args, flags } = await this.parse(Check);
    if (flags['list-rules']) {
      const rules = POLICY_RULES.map((r) => ({ id: r.id, name: r.name, severity: r.severity, summary: r.summary }));
      if (!this.jsonEnabled()) for (const r of rules) this.log(`${r.id} ${r.name} (${r.severity})\n    ${r.summary}`);
      return { rules };
    }
    if (!args.file) this.error('a topology file is required (or --list-rules)', { exit: 2 });
    const file = args.file as string;
    try {
      const { topology, source } = await loadTopology(file);
      const report = checkTopology(topology, source, { failOn: flags['fail-on'] });
      if (!report.ok) process.exitCode = 1;
      if (!this.jsonEnabled()) {
        for (const v of report.violations) this.log(`${v.severity} ${v.rule} ${v.name}: ${formatDetail(v)}`);
        this.log(`${file}: ${report.errors} error(s), ${report.warnings} warning(s)`);
      }
      return report;
    } catch (e) {
      if (!isScaleAgentError(e)) throw e;
      process.exitCode = exitCodeOf(e);
      const errors = e.details.length > 0 ? e.details : [{ file, message: e.message }];
      if (!this.jsonEnabled()) {
        for (const d of errors) this.logToStderr(formatDetail(d));
        this.logToStderr(e.message);
      }
      return { ok: false, file, code: e.code, errors };
    }
  }
}
