import { Args, Command } from '@oclif/core';
import { loadYamlFile, validateLoaded } from '../../compiler/index.js';
import { exitCodeOf, formatDetail, isScaleAgentError, type ErrorDetail } from '../../shared/errors.js';

export interface ValidateResult {
  ok: boolean;
  file: string;
  errors: ErrorDetail[];
  code?: string;
}

export default class Validate extends Command {
  static override args = {
    file: Args.string({ description: 'Topology file (YAML).', required: true }),
  };
  static override description =
    'Checks a topology file against schemas/topology.schema.json and the semantic rules (unique account names, ' +
    'what each mode needs, exclusive fields, reachable exposure) and reports every problem at once as ' +
    'file:line:column, JSON path and message. Exit code 0 when valid, 1 when not. YAML alias bombs, duplicate ' +
    'keys and oversized files are refused.';
  static override enableJsonFlag = true;
  static override examples = [
    '<%= config.bin %> validate topology.yaml',
    '<%= config.bin %> validate topology.yaml --json',
  ];
  static override summary = 'Validate a topology file.';

  async run(): Promise<ValidateResult> {
    const { args } = await this.parse(Validate);
    let result: ValidateResult;
    try {
      const v = validateLoaded(await loadYamlFile(args.file));
      result = { ok: v.ok, file: args.file, errors: v.errors };
    } catch (e) {
      if (!isScaleAgentError(e)) throw e;
      result = {
        ok: false,
        file: args.file,
        errors: e.details.length > 0 ? e.details : [{ file: args.file, message: e.message }],
        code: e.code,
      };
      process.exitCode = exitCodeOf(e);
    }
    if (!result.ok) process.exitCode ??= 1;
    if (!this.jsonEnabled()) {
      if (result.ok) this.log(`${args.file}: valid`);
      else {
        for (const d of result.errors) this.logToStderr(formatDetail(d));
        this.logToStderr(`${args.file}: ${result.errors.length} error${result.errors.length === 1 ? '' : 's'}`);
      }
    }
    return result;
  }
}
