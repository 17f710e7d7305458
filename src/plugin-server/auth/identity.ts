import type { PeerCertificate } from 'node:tls';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { bearerToken, type TokenFile } from './tokens.js';

/** Who is on the other end of a stream or request, as far as we can prove it. */
export interface Identity {
  /** For logs, the audit log and /armory/agents: the strongest name we have. */
  name: string;
  via: 'certificate' | 'token' | 'network' | 'none';
  uris: string[];
  dnsNames: string[];
  /** `CN=...,O=...` in certificate order. */
  subject?: string | undefined;
  commonName?: string | undefined;
  /** Name of the bearer token presented, when it is one we know. */
  token?: string | undefined;
  /** Set when a bearer token was presented but is not in the token file. */
  badToken?: boolean;
}

export const ANONYMOUS: Identity = { name: 'anonymous', via: 'none', uris: [], dnsNames: [] };

/** Facts of a verified peer certificate: Node only hands it over when the chain checked out. */
export function certificateIdentity(cert: PeerCertificate | undefined): Identity | undefined {
  if (!cert?.raw) return undefined;
  const uris: string[] = [];
  const dnsNames: string[] = [];
  // Node renders SANs as "DNS:a, URI:spiffe://x, IP Address:1.2.3.4"; values with ", " inside are quoted.
  for (const part of (cert.subjectaltname ?? '').split(/,\s*/)) {
    const m = /^(DNS|URI):"?(.*?)"?$/.exec(part.trim());
    if (m?.[1] === 'DNS') dnsNames.push(m[2]!);
    else if (m?.[1] === 'URI') uris.push(m[2]!);
  }
  const subjectEntries = Object.entries(cert.subject ?? {}).map(
    ([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : String(v)}`,
  );
  const subject = subjectEntries.join(',') || undefined;
  const cn = cert.subject?.CN;
  const commonName = Array.isArray(cn) ? cn[0] : cn;
  return {
    name: uris[0] ?? dnsNames[0] ?? subject ?? 'certificate',
    via: 'certificate',
    uris,
    dnsNames,
    subject,
    commonName,
  };
}

/**
 * The identity of an agent stream: its verified client certificate, else a bearer token from the
 * `authorization` metadata (for TLS terminated at a proxy), else anonymous.
 */
export function streamIdentity(call: ServerDuplexStream<unknown, unknown>, agentTokens?: TokenFile): Identity {
  let cert: Identity | undefined;
  try {
    cert = certificateIdentity(call.getAuthContext()?.sslPeerCertificate);
  } catch {
    cert = undefined;
  }
  const header = call.metadata.get('authorization')[0];
  const token = bearerToken(typeof header === 'string' ? header : header?.toString('utf8'));
  if (token === undefined) return cert ?? ANONYMOUS;
  const entry = agentTokens?.lookup(token);
  if (!entry) return { ...(cert ?? ANONYMOUS), badToken: true };
  if (cert) return { ...cert, token: entry.name };
  return { name: `token:${entry.name}`, via: 'token', uris: [], dnsNames: [], token: entry.name };
}
