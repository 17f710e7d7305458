import type { SecureServerOptions } from 'node:http2';
import type { SecureContextOptions } from 'node:tls';
import { ServerCredentials } from '@grpc/grpc-js';
import type { Counter, Gauge } from 'prom-client';
import type { Logger } from '../../shared/logging.js';
import { WatchedFiles } from '../../shared/watched-files.js';
import { readTlsFiles, tlsFiles, tlsMaterial, type GrpcTlsConfig, type TlsMaterial } from './material.js';

/** How often the files are read without a change event (a file system without inotify). */
export const TLS_POLL_MS = 30_000;

export interface TlsReloadMetrics {
  reloads: Counter<'result'>;
  notAfter: Gauge;
}

/**
 * Server credentials whose secure context can be replaced while the server listens. grpc-js has the mechanism:
 * each listening HTTP/2 server registers a watcher with its credentials and calls setSecureContext() when they
 * announce new options, which changes what new handshakes present and leaves established connections alone.
 * Its FileWatcherCertificateProvider does not fit: it only polls, knows no CRL, and a read that fails (a swap in
 * progress) withdraws the credentials, so the server drops every new connection until the next read.
 */
class ReloadableServerCredentials extends ServerCredentials {
  constructor(serverOptions: SecureServerOptions, contextOptions: SecureContextOptions) {
    super(serverOptions, contextOptions);
  }

  replace(options: SecureContextOptions): void {
    this.updateSecureContextOptions(options);
  }

  _equals(other: ServerCredentials): boolean {
    return this === other;
  }
}

export interface ReloadingTls {
  credentials: ServerCredentials;
  stop(): void;
}

/**
 * The gRPC server's TLS credentials, reloaded when grpc.tls's files change (cert-manager renewing the Secret, a
 * CRL update), without a restart. Files that do not make a valid set (a key that is not the certificate's, a PEM
 * that does not parse) are refused with an error naming the file, and the credentials already serving stay.
 */
export function reloadingTls(
  tls: GrpcTlsConfig,
  deps: { log: Logger; metrics: TlsReloadMetrics; pollMs?: number; debounceMs?: number },
): ReloadingTls {
  const { log, metrics } = deps;
  const initial = readTlsFiles(tls);
  const material = tlsMaterial(tls, initial);
  const credentials = new ReloadableServerCredentials(
    // requestCert + rejectUnauthorized: an agent without a certificate, with one from another CA, expired or
    // listed in the CRL never gets past the TLS handshake.
    { requestCert: tls.requireClientCert, rejectUnauthorized: tls.requireClientCert },
    material.options,
  );
  const serving = (m: TlsMaterial) => {
    metrics.notAfter.set(Math.floor(m.notAfter.getTime() / 1000));
    return { fingerprint256: m.fingerprint256, subject: m.subject.replace(/\n/g, ', '), notAfter: m.notAfter };
  };
  log.info({ ...serving(material), files: tlsFiles(tls) }, 'gRPC TLS certificate loaded; its files are watched');

  const watcher = new WatchedFiles(
    tlsFiles(tls),
    (contents) => {
      let next: TlsMaterial;
      try {
        next = tlsMaterial(tls, contents);
      } catch (e) {
        metrics.reloads.inc({ result: 'error' });
        log.error(
          { err: e },
          `gRPC TLS files changed but were not loaded; the previous certificate keeps serving: ${(e as Error).message}`,
        );
        return;
      }
      credentials.replace(next.options);
      metrics.reloads.inc({ result: 'success' });
      log.info(serving(next), 'gRPC TLS certificate reloaded: new handshakes present it, open streams continue');
    },
    { pollMs: deps.pollMs ?? TLS_POLL_MS, debounceMs: deps.debounceMs },
  );
  watcher.start(initial);
  return { credentials, stop: () => watcher.stop() };
}
