/**
 * mTLS end to end and agent identity (issue 6): handshake refusals for each bad certificate, the agent's server
 * name check, identity A unable to register B's account while its own streams, and the bearer-token variant.
 * Real plugin-server and agent processes, the real control plane.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, createServiceAccount, freePort, kubectl } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';
import {
  CONFIGMAP_READER,
  clientCredentials,
  createSecurityPki,
  probe,
  SERVER_NAME,
  uriOf,
  waitFor,
  type Pki,
} from './_security.js';

interface AgentView {
  agentId: string;
  accounts: string[];
  authIdentity: string;
  rejectedAccounts: { name: string; reason: string }[];
}

const dir = mkdtempSync(join(tmpdir(), 'scale-agent-sec-mtls-'));
let pki: Pki;
let ns: string;
let kubeconfigFile: string;
let server: PluginServerProcess;
let grpcAddress: string;
const agents: AgentProcess[] = [];

function agentTls(who: 'a' | 'b', serverName = SERVER_NAME) {
  return { caFile: pki.caFile, ...pki.agents[who], serverName };
}

function account(name: string) {
  return { name, kubeconfigFile, namespaces: [ns], kinds: ['ConfigMap'] };
}

beforeAll(async () => {
  pki = await createSecurityPki(join(dir, 'pki'));
  ns = await createNamespace('sec-mtls');
  await kubectl(['create', 'configmap', 'mtls-visible', '-n', ns, '--from-literal=k=v']);
  kubeconfigFile = (await createServiceAccount({ namespace: ns, name: 'reader', rules: CONFIGMAP_READER }))
    .kubeconfigPath;
  const port = await freePort();
  grpcAddress = `127.0.0.1:${port}`;
  server = await PluginServerProcess.start({
    dir,
    name: 'mtls-server',
    extra: {
      grpc: {
        host: '127.0.0.1',
        port,
        tls: {
          certFile: pki.server.certFile,
          keyFile: pki.server.keyFile,
          clientCaFile: pki.caFile,
          crlFile: pki.crlFile,
          requireClientCert: true,
        },
      },
      authorization: {
        identities: [
          { match: { uri: uriOf('a') }, accounts: ['sec-a-*'] },
          { match: { uri: uriOf('b') }, accounts: ['sec-b-*'] },
        ],
      },
    },
  });
}, 120_000);

afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  await server?.stop();
});

describe('gRPC with requireClientCert', () => {
  it('welcomes a valid agent certificate', async () => {
    const { creds, options } = clientCredentials(pki, 'a');
    const r = await probe(grpcAddress, creds, options, ['sec-a-probe']);
    expect('welcome' in r && r.welcome.acceptedAccounts).toEqual(['sec-a-probe']);
  });

  it.each(['none', 'foreign', 'expired', 'revoked'] as const)(
    'refuses a client with certificate "%s" at the TLS handshake',
    async (who) => {
      const { creds, options } = clientCredentials(pki, who);
      const r = await probe(grpcAddress, creds, options, ['sec-a-probe']);
      expect(r).toMatchObject({ code: status.UNAVAILABLE });
      // Nothing got as far as a session: no agent listed, nothing registered.
      const agentsNow = (await server.get<AgentView[]>('/armory/agents')).body;
      expect(agentsNow.filter((a) => a.agentId.startsWith('probe-') && a.accounts.length > 0)).toEqual([]);
    },
  );

  it('refuses plaintext on the TLS port', async () => {
    const r = await probe(grpcAddress, credentials.createInsecure(), {}, ['sec-a-probe']);
    expect(r).toMatchObject({ code: status.UNAVAILABLE });
  });

  it('a valid certificate with a server name the server certificate does not carry is refused by the client', async () => {
    const { creds, options } = clientCredentials(pki, 'a', 'not-the-plugin-server.test');
    const r = await probe(grpcAddress, creds, options, ['sec-a-probe']);
    expect(r).toMatchObject({ code: status.UNAVAILABLE });
  });
});

describe('agent processes', () => {
  it('the agent refuses a plugin-server whose certificate does not match its serverName', async () => {
    const agent = await AgentProcess.start({
      dir,
      agentId: 'wrong-name-agent',
      serverAddress: grpcAddress,
      accounts: [account('sec-a-wrongname')],
      waitReady: false,
      extra: {
        server: {
          address: grpcAddress,
          tls: agentTls('a', 'evil.example.test'),
          heartbeatSeconds: 5,
          backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 1 },
        },
      },
    });
    agents.push(agent);
    const line = await waitFor('the agent to log the refused server', () =>
      readFileSync(agent.logFile, 'utf8')
        .split('\n')
        .find((l) => /does not match certificate's altnames/.test(l)),
    );
    expect(line).toContain('evil.example.test');
    const listed = (await server.get<AgentView[]>('/armory/agents')).body;
    expect(listed.map((a) => a.agentId)).not.toContain('wrong-name-agent');
    await agent.stop();
  });

  it("identity A cannot register B's account name; A's own account streams", async () => {
    const before = await server.metric('scale_agent_plugin_server_account_rejections_total{reason="unauthorized"}');
    const agent = await AgentProcess.start({
      dir,
      agentId: 'agent-a',
      serverAddress: grpcAddress,
      accounts: [account('sec-a-one'), account('sec-b-one')],
      extra: {
        server: {
          address: grpcAddress,
          tls: agentTls('a'),
          heartbeatSeconds: 5,
          backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 1 },
        },
      },
    });
    agents.push(agent);
    const view = await waitFor('agent-a in /armory/agents', async () =>
      (await server.get<AgentView[]>('/armory/agents')).body.find((a) => a.agentId === 'agent-a'),
    );
    expect(view.accounts).toEqual(['sec-a-one']);
    expect(view.authIdentity).toBe(uriOf('a'));
    expect(view.rejectedAccounts).toEqual([
      { name: 'sec-b-one', reason: expect.stringMatching(/unauthorized.*may not register account sec-b-one/) },
    ]);
    // A's account is in the cache, object for object.
    const cached = await waitFor('sec-a-one cached', async () => {
      const r = await server.get<{ name: string }[]>(`/admin/cache/sec-a-one?kind=ConfigMap`);
      return r.status === 200 && r.body.some((o) => o.name === 'mtls-visible') ? r.body : undefined;
    });
    expect(cached.map((o) => o.name)).toContain('mtls-visible');
    expect((await server.get('/admin/cache/sec-b-one')).status).toBe(404);
    // The agent says why, in its log.
    const agentLog = readFileSync(agent.logFile, 'utf8');
    expect(agentLog).toMatch(
      /account rejected by plugin-server.*sec-b-one|sec-b-one.*account rejected by plugin-server/,
    );
    // The server logs and counts it (its log is written asynchronously: wait for the line, do not read once).
    await waitFor('the refusal in the server log', () =>
      /"account":"sec-b-one".*unauthorized/.test(readFileSync(server.logFile, 'utf8')),
    );
    expect(
      await server.metric('scale_agent_plugin_server_account_rejections_total{reason="unauthorized"}'),
    ).toBeGreaterThan(before);
  });

  it("identity B can register its own names but not A's", async () => {
    const { creds, options } = clientCredentials(pki, 'b');
    const r = await probe(grpcAddress, creds, options, ['sec-b-two', 'sec-a-two']);
    if (!('welcome' in r)) throw new Error(`no welcome: ${r.details}`);
    expect(r.welcome.acceptedAccounts).toEqual(['sec-b-two']);
    expect(r.welcome.rejectedAccounts.map((x) => x.name)).toEqual(['sec-a-two']);
  });
});

describe('bearer-token identity (TLS terminated in front of the server)', () => {
  let tokenServer: PluginServerProcess;
  const tokenA = randomBytes(24).toString('hex');

  beforeAll(async () => {
    const tokensFile = join(dir, 'agent-tokens');
    writeFileSync(tokensFile, `# agent tokens\n${tokenA} team-a\n`, { mode: 0o600 });
    tokenServer = await PluginServerProcess.start({
      dir,
      name: 'token-server',
      extra: {
        authorization: {
          agentTokensFile: tokensFile,
          identities: [{ match: { token: 'team-a' }, accounts: ['tok-a-*'] }],
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await tokenServer?.stop();
  });

  it("the token's identity registers its own accounts and not others; no or a wrong token registers nothing", async () => {
    const tokenFile = join(dir, 'agent-a.token');
    writeFileSync(tokenFile, `${tokenA}\n`, { mode: 0o600 });
    const agent = await AgentProcess.start({
      dir,
      agentId: 'token-agent',
      serverAddress: tokenServer.grpcAddress,
      accounts: [account('tok-a-one'), account('tok-b-one')],
      extra: {
        server: {
          address: tokenServer.grpcAddress,
          insecure: true,
          tokenFile,
          heartbeatSeconds: 5,
          backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 1 },
        },
      },
    });
    agents.push(agent);
    const view = await waitFor('token-agent listed', async () =>
      (await tokenServer.get<AgentView[]>('/armory/agents')).body.find((a) => a.agentId === 'token-agent'),
    );
    expect(view.authIdentity).toBe('token:team-a');
    expect(view.accounts).toEqual(['tok-a-one']);
    expect(view.rejectedAccounts.map((r) => r.name)).toEqual(['tok-b-one']);
    await waitFor('tok-a-one cached', async () =>
      (await tokenServer.get<{ name: string }[]>('/admin/cache/tok-a-one?kind=ConfigMap')).body.some(
        (o) => o.name === 'mtls-visible',
      ),
    );

    const anonymous = await probe(tokenServer.grpcAddress, credentials.createInsecure(), {}, ['tok-a-two']);
    if (!('welcome' in anonymous)) throw new Error(anonymous.details);
    expect(anonymous.welcome.acceptedAccounts).toEqual([]);
    expect(anonymous.welcome.rejectedAccounts[0]?.reason).toMatch(/matches no authorization rule/);
    await agent.stop();
  });
});
