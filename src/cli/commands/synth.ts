import { Args, Command, Flags } from '@oclif/core';
import { synthFile, type SynthSummary } from '../../compiler/index.js';
import { exitCodeOf, formatDetail, isScaleAgentError, type ErrorDetail } from '../../shared/errors.js';

export type SynthCommandResult =
  | { ok: true; out: string; written: string[]; removed: string[]; certsWritten: string[]; summary: SynthSummary }
  | { ok: false; file: string; code: string; errors: ErrorDetail[] };

export default class Synth extends Command {
  static override args = {
    file: Args.string({ description: 'Topology file (YAML).', required: true }),
  };
  static override description =
    'Validates the topology and writes, for every place to apply (the plugin-server cluster, each agent group, ' +
    'each target cluster of a kubeconfig account): a Kustomize overlay over a copy of the base ' +
    '(OUT/kustomize/overlays/<place>, OUT/kustomize/base), a values file for charts/scale-agent ' +
    '(OUT/helm/<place>.values.yaml), the rendered manifests (OUT/manifests/<place>.yaml) and OUT/summary.json ' +
    '(what goes where, in which order). Output is deterministic. Generated certificates and secrets (the dynamic ' +
    "accounts' encryption key, the replicas' peer secret) are kept in --certs-dir and reused on the next run, so " +
    're-running does not rotate them. The output holds private keys in ' +
    'Secrets: treat it like one.';
  static override enableJsonFlag = true;
  static override examples = [
    '<%= config.bin %> synth topology.yaml --out deploy/',
    '<%= config.bin %> synth topology.yaml --out deploy/ --certs-dir ~/secure/scale-agent-certs',
  ];
  static override flags = {
    out: Flags.directory({ char: 'o', summary: 'Output directory.', required: true }),
    'certs-dir': Flags.directory({
      summary:
        'Where generated certificates, the CA key and generated secrets live, and are reused from. Default: OUT/certs.',
    }),
  };
  static override summary = 'Compile a topology into Kustomize overlays, Helm values and manifests.';

  async run(): Promise<SynthCommandResult> {
    const { args, flags } = await this.parse(Synth);
    try {
      const r = await synthFile(args.file, {
        out: flags.out,
        ...(flags['certs-dir'] ? { certsDir: flags['certs-dir'] } : {}),
      });
      if (!this.jsonEnabled()) {
        this.log(
          `${args.file} → ${flags.out}: ${r.files.size} files (${r.written.length} written, ${r.removed.length} removed)`,
        );
        if (r.certsWritten.length > 0) this.log(`certificates and secrets issued: ${r.certsWritten.join(', ')}`);
        this.log('apply in this order:');
        for (const p of r.summary.places) {
          this.log(`  ${p.order} ${p.name}: ${p.cluster}, namespace ${p.namespace} (${p.orderReason})`);
          for (const need of p.requires) this.log(`      needs ${need}`);
          this.log(`      ${p.apply[0]}`);
        }
        this.log('Spinnaker:');
        for (const line of r.summary.spinnaker) this.log(`  ${line}`);
      }
      return {
        ok: true,
        out: flags.out,
        written: r.written,
        removed: r.removed,
        certsWritten: r.certsWritten,
        summary: r.summary,
      };
    } catch (e) {
      if (!isScaleAgentError(e)) throw e;
      process.exitCode = exitCodeOf(e);
      const errors = e.details.length > 0 ? e.details : [{ file: args.file, message: e.message }];
      if (!this.jsonEnabled()) {
        for (const d of errors) this.logToStderr(formatDetail(d));
        this.logToStderr(e.message);
      }
      return { ok: false, file: args.file, code: e.code, errors };
    }
  }
}
