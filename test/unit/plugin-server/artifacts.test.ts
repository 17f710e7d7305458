/**
 * What the plugin-server fetches itself (PUT /artifacts/fetch/, GET /artifacts/credentials): embedded/base64
 * decoding, the http/file allow-list, the account list in Clouddriver's shape, and a 400 that says why for the rest.
 * Downloads against a real HTTP server are in test/integration/plugin-server/artifacts.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ArtifactCatalogue } from '../../../src/plugin-server/artifacts/catalogue.js';
import { hostAllowed } from '../../../src/plugin-server/artifacts/http-file.js';
import { parsePluginServerConfig } from '../../../src/plugin-server/config.js';
import { ScaleAgentError } from '../../../src/shared/errors.js';
import { rejection } from '../../infra/assertions.js';

const manifest = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: blue\n';
const embeddedOnly = new ArtifactCatalogue(undefined);
const withHttp = new ArtifactCatalogue({
  http: [{ name: 'team-files', allowedHosts: ['files.example.com'] }],
  timeoutMs: 1000,
  maxBytes: 1024,
});

const refusal = (catalogue: ArtifactCatalogue, body: unknown): Promise<ScaleAgentError> =>
  rejection(ScaleAgentError, () => catalogue.fetch(body));

describe('artifact fetch', () => {
  it('decodes an embedded/base64 artifact as Orca sends it', async () => {
    const body = {
      type: 'embedded/base64',
      name: 'settings.yml',
      reference: Buffer.from(manifest).toString('base64'),
      artifactAccount: 'embedded-artifact',
      customKind: false,
      metadata: {},
    };
    expect((await embeddedOnly.fetch(body)).toString('utf8')).toBe(manifest);
    expect(await embeddedOnly.fetch({ type: 'embedded/base64', reference: '' })).toHaveLength(0);
    expect([...(await embeddedOnly.fetch({ type: 'embedded/base64', reference: '/w==' }))]).toEqual([255]);
  });

  it('refuses other types, naming the type, what is served and front mode', async () => {
    const body = { type: 'github/file', reference: 'https://api.github.com/repos/acme/x/contents/a.yml' };
    const e = await refusal(embeddedOnly, body);
    expect(e.code).toBe('SA_ERR_INVALID_INPUT');
    expect(e.message).toMatch(/artifact type "github\/file" cannot be fetched here.*only embedded\/base64 artifacts/);
    expect(e.message).toMatch(/spinnaker\.upstream\.baseUrl \(front mode/);
    // Without an http account, http/file is one of the others.
    const http = await refusal(embeddedOnly, { type: 'http/file', reference: 'https://files.example.com/a.yml' });
    expect(http.message).toMatch(/artifact type "http\/file" cannot be fetched here/);
    expect((await refusal(withHttp, body)).message).toMatch(/only embedded\/base64 and http\/file artifacts/);
  });

  it.each([
    ['no object', 'aGVsbG8=', /one artifact as a JSON object/],
    ['an array', [{ type: 'embedded/base64' }], /one artifact as a JSON object/],
    ['no type', { reference: 'aGVsbG8=' }, /no type/],
    ['no reference', { type: 'embedded/base64' }, /carries its content in "reference"/],
    ['bad base64', { type: 'embedded/base64', reference: 'aGVs bG8=' }, /not valid base64/],
    ['unpadded base64', { type: 'embedded/base64', reference: 'aGVsbG8' }, /not valid base64/],
  ])('refuses %s', async (_what, body, message) => {
    const e = await refusal(embeddedOnly, body);
    expect(e.code).toBe('SA_ERR_INVALID_INPUT');
    expect(e.message).toMatch(message);
  });

  it.each([
    [
      'no artifactAccount',
      { type: 'http/file', reference: 'https://files.example.com/a' },
      400,
      /must name its artifactAccount \(team-files\)/,
    ],
    [
      'an unknown account',
      { type: 'http/file', artifactAccount: 'nope', reference: 'https://files.example.com/a' },
      404,
      /Credentials 'nope' supporting artifact type 'http\/file' cannot be found/,
    ],
    ['no reference', { type: 'http/file', artifactAccount: 'team-files' }, 400, /names its URL in "reference"/],
    [
      'a reference that is no URL',
      { type: 'http/file', artifactAccount: 'team-files', reference: 'a.yml' },
      400,
      /"a\.yml" is not a URL/,
    ],
    [
      'a file URL',
      { type: 'http/file', artifactAccount: 'team-files', reference: 'file:///etc/passwd' },
      400,
      /must be http:\/\/ or https:\/\//,
    ],
    [
      'a host not allowed',
      { type: 'http/file', artifactAccount: 'team-files', reference: 'http://169.254.169.254/latest' },
      400,
      /"team-files" does not fetch from 169\.254\.169\.254: its allowedHosts are files\.example\.com/,
    ],
    [
      'another port',
      { type: 'http/file', artifactAccount: 'team-files', reference: 'https://files.example.com:6443/a' },
      400,
      /does not fetch from files\.example\.com:6443/,
    ],
  ])('refuses an http/file artifact with %s before any connection', async (_what, body, status, message) => {
    const e = await refusal(withHttp, body);
    expect(e.code).toBe(status === 404 ? 'SA_ERR_NOT_FOUND' : 'SA_ERR_INVALID_INPUT');
    expect(e.message).toMatch(message);
  });
});

describe('http/file allow-list', () => {
  it.each([
    ['https://files.example.com/a', ['files.example.com'], true],
    ['http://files.example.com/a', ['files.example.com'], true],
    ['https://FILES.example.com:443/a', ['files.example.com'], true],
    ['https://files.example.com:8443/a', ['files.example.com'], false],
    ['https://files.example.com:8443/a', ['files.example.com:8443'], true],
    ['https://files.example.com/a', ['files.example.com:8443'], false],
    ['https://a.files.example.com/a', ['*.files.example.com'], true],
    ['https://files.example.com/a', ['*.files.example.com'], false],
    ['https://evilfiles.example.com/a', ['*.files.example.com'], false],
    ['https://files.example.com.evil.io/a', ['files.example.com'], false],
    ['http://127.0.0.1:8080/a', ['127.0.0.1:8080'], true],
    ['http://[::1]:8080/a', ['[::1]:8080'], true],
    ['http://[::1]/a', ['[::1]:8080'], false],
  ])('%s with %j: %s', (url, hosts, allowed) => {
    expect(hostAllowed(new URL(url), hosts)).toBe(allowed);
  });
});

describe('artifact accounts', () => {
  it('lists them as Clouddriver serialises ArtifactCredentials: name, types, credentials type', () => {
    expect(embeddedOnly.credentials()).toEqual([
      { name: 'embedded-artifact', types: ['embedded/base64'], type: 'artifacts-embedded' },
    ]);
    expect(withHttp.credentials()).toEqual([
      { name: 'embedded-artifact', types: ['embedded/base64'], type: 'artifacts-embedded' },
      { name: 'team-files', types: ['http/file'], type: 'artifacts-http' },
    ]);
  });

  const config = (artifacts: string, upstream = '') =>
    `grpc: {port: 0}\nhttp: {port: 0}\nspinnaker:\n${upstream}  artifacts:\n${artifacts}`;

  it('takes http accounts from the config, resolving their files next to it', () => {
    const parsed = parsePluginServerConfig(
      config('    http:\n      - {name: team-files, allowedHosts: [files.example.com], tokenFile: token}\n'),
      '/etc/scale-agent/plugin-server.yaml',
    );
    expect(parsed.spinnaker?.artifacts).toEqual({
      http: [{ name: 'team-files', allowedHosts: ['files.example.com'], tokenFile: '/etc/scale-agent/token' }],
      timeoutMs: 30000,
      maxBytes: 16777216,
    });
  });

  it.each([
    ['no allowedHosts', '    http: [{name: a}]\n', '', /allowedHosts/],
    ['a URL as host', '    http: [{name: a, allowedHosts: ["https://x.io"]}]\n', '', /must match \^/],
    [
      'a name twice',
      '    http: [{name: a, allowedHosts: [x.io]}, {name: a, allowedHosts: [y.io]}]\n',
      '',
      /"a" is taken/,
    ],
    ['the embedded name', '    http: [{name: embedded-artifact, allowedHosts: [x.io]}]\n', '', /is taken/],
    [
      'two credentials',
      '    http: [{name: a, allowedHosts: [x.io], tokenFile: t, usernamePasswordFile: u}]\n',
      '',
      /one of usernamePasswordFile and tokenFile/,
    ],
    [
      'front mode',
      '    http: [{name: a, allowedHosts: [x.io]}]\n',
      '  upstream: {baseUrl: "http://clouddriver:7002"}\n',
      /for standalone mode; with spinnaker\.upstream set, configure them in Clouddriver/,
    ],
  ])('refuses %s', (_what, artifacts, upstream, message) => {
    let error: ScaleAgentError | undefined;
    try {
      parsePluginServerConfig(config(artifacts, upstream));
    } catch (e) {
      error = e as ScaleAgentError;
    }
    expect(error?.code).toBe('SA_ERR_INVALID_INPUT');
    expect((error?.details ?? []).map((d) => d.message).join('; ')).toMatch(message);
  });
});
