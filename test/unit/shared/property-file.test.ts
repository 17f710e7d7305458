/**
 * The Run Job property capture on log text as a job container prints it (shell `echo`, a build tool's output
 * around it, CRLF from Windows-built images).
 */
import { describe, expect, it } from 'vitest';
import { parsePropertyFile } from '../../../src/shared/ops/property-file.js';

describe('property file from a job log', () => {
  it('reads SPINNAKER_PROPERTY_ lines (names lower-cased, values trimmed) among other output', () => {
    const log = [
      '+ ./migrate.sh --target prod',
      'Applying migration 0042_add_orders_index ... done',
      'SPINNAKER_PROPERTY_MIGRATION_VERSION=0042',
      'SPINNAKER_PROPERTY_IMAGE_TAG= ghcr.io/acme/api:1.8.3  ',
      'not a property: SPINNAKER_PROPERTY_',
      'migrations complete',
      '',
    ].join('\n');
    expect(parsePropertyFile(log)).toEqual({ migration_version: '0042', image_tag: 'ghcr.io/acme/api:1.8.3' });
  });

  it('keeps everything after the first "=" and drops text before the marker', () => {
    const log = '2026-11-23T22:10:01.123Z SPINNAKER_PROPERTY_JDBC_URL=jdbc:mysql://db:3306/shop?useSSL=true\n';
    expect(parsePropertyFile(log)).toEqual({ jdbc_url: 'jdbc:mysql://db:3306/shop?useSSL=true' });
  });

  it('merges SPINNAKER_CONFIG_JSON objects, later lines winning, and skips JSON that is not an object', () => {
    const log = [
      'SPINNAKER_PROPERTY_REGION=eu-west-1',
      '  SPINNAKER_CONFIG_JSON={"region":"us-east-1","replicas":3,"canary":{"weight":10}}',
      'SPINNAKER_CONFIG_JSON={"broken": ',
      'SPINNAKER_CONFIG_JSON=[1,2,3]',
      'echo SPINNAKER_CONFIG_JSON={"ignored":true}',
      'SPINNAKER_PROPERTY_REPLICAS=5',
    ].join('\r\n');
    expect(parsePropertyFile(log)).toEqual({ region: 'us-east-1', replicas: '5', canary: { weight: 10 } });
  });

  it('answers an empty map for a log without properties, and an empty value as ""', () => {
    expect(parsePropertyFile('hello\nworld\n')).toEqual({});
    expect(parsePropertyFile('SPINNAKER_PROPERTY_EMPTY=\nSPINNAKER_PROPERTY_=x\n')).toEqual({ empty: '' });
  });
});
