import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describeCertificate, generateCa, isSignedBy, issueCertificate, type PemPair } from './x509.js';

/** What a deployment needs: one server certificate and named client certificates, all from one CA. */
export interface CertSetRequest {
  caCommonName: string;
  server: { commonName: string; dnsNames: string[]; ipAddresses?: string[] };
  clients: { name: string; commonName: string; uris: string[] }[];
  validityDays: number;
  /** Reissue a leaf certificate when it expires within this many days. */
  renewBeforeDays?: number;
  now?: Date;
}

export interface CertSet {
  ca: PemPair;
  server: PemPair;
  clients: Record<string, PemPair>;
  /** Files written by this call (new or reissued); empty when everything was reused. */
  written: string[];
}

const DAY_MS = 86_400_000;

/**
 * Loads the set from `dir` and reuses every certificate that still fits the request (same CA, same names, not
 * about to expire), so re-running `synth` does not rotate anything; issues only what is missing or stale.
 * Layout: ca.crt ca.key server.crt server.key client-<name>.crt client-<name>.key. Keys are written 0600.
 */
export async function ensureCertSet(dir: string, req: CertSetRequest): Promise<CertSet> {
  await mkdir(dir, { recursive: true });
  const now = req.now ?? new Date();
  const renewBefore = (req.renewBeforeDays ?? 30) * DAY_MS;
  const written: string[] = [];

  let ca = await readPair(dir, 'ca');
  if (!ca || describeCertificate(ca.cert).notAfter.getTime() - now.getTime() < renewBefore) {
    ca = await generateCa({ commonName: req.caCommonName, now });
    written.push(...(await writePair(dir, 'ca', ca)));
  }

  const fits = async (pair: PemPair | undefined, dns: string[], uris: string[]): Promise<boolean> => {
    if (!pair || !ca) return false;
    const facts = describeCertificate(pair.cert);
    return (
      (await isSignedBy(pair.cert, ca.cert)) &&
      facts.notAfter.getTime() - now.getTime() >= renewBefore &&
      sameSet(facts.dnsNames, dns) &&
      sameSet(facts.uris, uris)
    );
  };

  let server = await readPair(dir, 'server');
  if (!(await fits(server, req.server.dnsNames, []))) {
    server = await issueCertificate(ca, {
      commonName: req.server.commonName,
      usage: 'server',
      dnsNames: req.server.dnsNames,
      ipAddresses: req.server.ipAddresses ?? [],
      validityDays: req.validityDays,
      now,
    });
    written.push(...(await writePair(dir, 'server', server)));
  }

  const clients: Record<string, PemPair> = {};
  for (const c of req.clients) {
    const base = `client-${c.name}`;
    let pair = await readPair(dir, base);
    if (!(await fits(pair, [], c.uris))) {
      pair = await issueCertificate(ca, {
        commonName: c.commonName,
        usage: 'client',
        uris: c.uris,
        validityDays: req.validityDays,
        now,
      });
      written.push(...(await writePair(dir, base, pair)));
    }
    clients[c.name] = pair as PemPair;
  }
  return { ca, server: server as PemPair, clients, written };
}

async function readPair(dir: string, base: string): Promise<PemPair | undefined> {
  try {
    const [cert, key] = await Promise.all([
      readFile(join(dir, `${base}.crt`), 'utf8'),
      readFile(join(dir, `${base}.key`), 'utf8'),
    ]);
    describeCertificate(cert); // throws on garbage, which then gets replaced
    return { cert, key };
  } catch {
    return undefined;
  }
}

async function writePair(dir: string, base: string, pair: PemPair): Promise<string[]> {
  const crt = join(dir, `${base}.crt`);
  const key = join(dir, `${base}.key`);
  await writeFile(crt, pair.cert);
  await writeFile(key, pair.key, { mode: 0o600 });
  await chmod(key, 0o600);
  return [crt, key];
}

function sameSet(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  const s = new Set(a);
  return b.every((x) => s.has(x));
}
