import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { ScaleAgentError } from '../../shared/errors.js';
import type { PluginServerConfig } from '../config.js';

export type GrpcTlsConfig = NonNullable<PluginServerConfig['grpc']['tls']>;

/** The files of grpc.tls, in a fixed order: what is watched and what tlsMaterial() takes. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
  clientCaFile?: string;
  crlFile?: string;
}

/** Validated secure context options and what the serving certificate says about itself. */
export interface TlsMaterial {
  options: SecureContextOptions;
  /** SHA-256 fingerprint of the serving (first) certificate, as node's X509Certificate prints it. */
  fingerprint256: string;
  subject: string;
  notAfter: Date;
}

export function tlsFiles(tls: GrpcTlsConfig): string[] {
  return [
    tls.certFile,
    tls.keyFile,
    ...(tls.clientCaFile ? [tls.clientCaFile] : []),
    ...(tls.crlFile ? [tls.crlFile] : []),
  ];
}

/** Reads the files of grpc.tls (at startup: an unreadable file stops the server, naming the key and the file). */
export function readTlsFiles(tls: GrpcTlsConfig): Buffer[] {
  return tlsFiles(tls).map((file) => {
    try {
      return readFileSync(file);
    } catch (e) {
      throw new ScaleAgentError('FILE_UNREADABLE', `grpc.tls.${keyOf(tls, file)}: cannot read ${file}`, { cause: e });
    }
  });
}

/**
 * Checks the contents of the grpc.tls files (in tlsFiles() order) and builds the secure context options from them.
 * Node ignores a CA file without certificates and OpenSSL would only notice a key that does not match its
 * certificate at the first handshake, so each part is checked here, and a failure names the key and the file: a
 * reload that fails keeps the credentials already serving.
 */
export function tlsMaterial(tls: GrpcTlsConfig, contents: readonly Buffer[]): TlsMaterial {
  let i = 0;
  const next = (): Buffer => contents[i++] ?? Buffer.alloc(0);
  const cert = next();
  const key = next();
  const ca = tls.clientCaFile ? next() : undefined;
  const crlRaw = tls.crlFile ? next() : undefined;
  const fail = (what: keyof TlsFiles, message: string, cause?: unknown): never => {
    throw new ScaleAgentError('INVALID_INPUT', `grpc.tls.${what}: ${tls[what]} ${message}`, { cause });
  };

  const chain = certificates(
    cert,
    () => fail('certFile', 'holds no PEM certificate'),
    (e) => fail('certFile', `holds a certificate that does not parse (${(e as Error).message})`, e),
  );
  const leaf = chain[0] as X509Certificate;
  let privateKey: KeyObject | undefined;
  try {
    privateKey = createPrivateKey(key);
  } catch (e) {
    fail('keyFile', `holds no parsable PEM private key (${(e as Error).message})`, e);
  }
  if (!leaf.checkPrivateKey(privateKey as KeyObject)) {
    fail(
      'keyFile',
      `is not the private key of the certificate in ${tls.certFile} (${leaf.subject.replace(/\n/g, ', ')})`,
    );
  }
  if (ca) {
    certificates(
      ca,
      () => fail('clientCaFile', 'holds no PEM certificate'),
      (e) => fail('clientCaFile', `holds a certificate that does not parse (${(e as Error).message})`, e),
    );
  }
  // OpenSSL wants "X509 CRL" PEM labels; some tools (and RFC 7468's lax form) write "CRL".
  const crl = crlRaw
    ? Buffer.from(crlRaw.toString('utf8').replace(/-----(BEGIN|END) CRL-----/g, '-----$1 X509 CRL-----'))
    : undefined;
  const options: SecureContextOptions = { cert, key, ...(ca ? { ca } : {}), ...(crl ? { crl } : {}) };
  if (crl) {
    try {
      createSecureContext({ crl });
    } catch (e) {
      fail('crlFile', `holds a revocation list that does not parse (${(e as Error).message})`, e);
    }
  }
  try {
    // What the gRPC server will do with these options; a failure here would stop it from accepting connections.
    createSecureContext(options);
  } catch (e) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `grpc.tls: ${tlsFiles(tls).join(', ')} do not make a TLS context (${(e as Error).message})`,
      { cause: e },
    );
  }
  return { options, fingerprint256: leaf.fingerprint256, subject: leaf.subject, notAfter: leaf.validToDate };
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Every PEM certificate in `pem`, parsed; `none` when there is none, `bad` for the first that does not parse. */
function certificates(pem: Buffer, none: () => never, bad: (e: unknown) => never): X509Certificate[] {
  const blocks = pem.toString('utf8').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) none();
  return blocks.map((b) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      return bad(e);
    }
  });
}

function keyOf(tls: GrpcTlsConfig, file: string): keyof TlsFiles {
  const keys: (keyof TlsFiles)[] = ['certFile', 'keyFile', 'clientCaFile', 'crlFile'];
  return keys.find((k) => tls[k] === file) ?? 'certFile';
}
