export {
  generateCa,
  issueCertificate,
  describeCertificate,
  isSignedBy,
  keyMatchesCertificate,
  type PemPair,
  type CaOptions,
  type LeafOptions,
  type CertificateFacts,
} from './x509.js';
export { ensureCertSet, type CertSet, type CertSetRequest } from './cert-set.js';
