export { reloadingTls, TLS_POLL_MS, type ReloadingTls, type TlsReloadMetrics } from './reloading-credentials.js';
export { readTlsFiles, tlsFiles, tlsMaterial, type GrpcTlsConfig, type TlsMaterial } from './material.js';
