import { resolve } from 'node:path';
import { Command, Flags } from '@oclif/core';
import { agentIdentityUri } from '../../compiler/names.js';
import { describeCertificate, ensureCertSet } from '../../shared/certs/index.js';

export default class Certs extends Command {
  static override summary = 'Generate a CA, a plugin-server certificate and agent client certificates for mTLS.';
  static override description =
    'Writes an ECDSA P-256 CA (ca.crt, ca.key), a server certificate for the plugin-server gRPC endpoint ' +
    '(server.crt, server.key) and one client certificate per agent (client-<agent>.crt/.key) into --out. The ' +
    'agent certificates carry the identity URI spiffe://scale-agent/<topology>/agent/<agent>, which the ' +
    "plugin-server's authorization policy maps to the accounts that agent may register. Re-running keeps every " +
    'certificate that still matches the flags and is not about to expire, so nothing rotates by accident. This ' +
    'is the same code `scale-agent synth` uses for `certificates: { source: generate }`; use it for local runs ' +
    'and tests, and cert-manager or your own PKI in production. Keys are written with mode 0600.';
  static override examples = [
    '<%= config.bin %> certs --out ./certs --agent core --agent edge',
    '<%= config.bin %> certs --out ./certs --server-name grpc.example.com --server-ip 10.0.0.5 --agent core --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    out: Flags.string({ char: 'o', summary: 'Directory for the PEM files (created if missing).', default: 'certs' }),
    'server-name': Flags.string({
      summary: 'DNS name the server certificate is valid for (repeatable).',
      multiple: true,
      default: ['localhost'],
    }),
    'server-ip': Flags.string({
      summary: 'IP address the server certificate is valid for (repeatable).',
      multiple: true,
      default: ['127.0.0.1'],
    }),
    agent: Flags.string({
      summary: 'Agent (group) name to issue a client certificate for (repeatable).',
      multiple: true,
    }),
    topology: Flags.string({ summary: 'Topology name used in the agent identity URI.', default: 'local' }),
    days: Flags.integer({ summary: 'Validity of the server and agent certificates in days.', default: 365, min: 1 }),
  };

  async run(): Promise<{ dir: string; written: string[]; certificates: Record<string, unknown> }> {
    const { flags } = await this.parse(Certs);
    const dir = resolve(flags.out);
    const agents = flags.agent ?? [];
    const bad = agents.filter((a) => !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(a));
    if (bad.length) this.error(`--agent ${bad[0]}: agent names must be lower-case DNS labels`, { exit: 1 });
    const set = await ensureCertSet(dir, {
      caCommonName: `scale-agent ${flags.topology} CA`,
      server: {
        commonName: flags['server-name'][0] ?? 'localhost',
        dnsNames: flags['server-name'],
        ipAddresses: flags['server-ip'],
      },
      clients: agents.map((a) => ({ name: a, commonName: `agent-${a}`, uris: [agentIdentityUri(flags.topology, a)] })),
      validityDays: flags.days,
    });
    const describe = (pem: string) => {
      const f = describeCertificate(pem);
      return { subject: f.subject, dnsNames: f.dnsNames, uris: f.uris, notAfter: f.notAfter.toISOString() };
    };
    const certificates: Record<string, unknown> = { ca: describe(set.ca.cert), server: describe(set.server.cert) };
    for (const [name, pair] of Object.entries(set.clients)) certificates[`client-${name}`] = describe(pair.cert);
    this.log(
      set.written.length
        ? `wrote ${set.written.length} files to ${dir}:\n  ${set.written.join('\n  ')}`
        : `all certificates in ${dir} are current; nothing written`,
    );
    return { dir, written: set.written, certificates };
  }
}
