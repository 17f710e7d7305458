import { mkdtempSync } from 'node:fs';
import { connect, type Settings } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcurl } from '../../infra/index.js';
import { PluginServerProcess } from '../../infra/processes.js';

// The real grpcurl (built by tools/k8s) against a real plugin-server process: server reflection must serve
// descriptors a protobuf implementation other than ours accepts (grpcurl validates them with Go's protodesc).
describe('gRPC server reflection and health through grpcurl', () => {
  let server: PluginServerProcess;
  beforeAll(async () => {
    server = await PluginServerProcess.start({ dir: mkdtempSync(join(tmpdir(), 'sa-reflection-')) });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('lists every service', async () => {
    const { stdout } = await grpcurl(['-plaintext', server.grpcAddress, 'list']);
    expect(stdout.trim().split('\n').sort()).toEqual(['grpc.health.v1.Health', 'scaleagent.v1.AgentService']);
  });

  it('describes every service and the messages with map fields', async () => {
    const agent = await grpcurl(['-plaintext', server.grpcAddress, 'describe', 'scaleagent.v1.AgentService']);
    expect(agent.stdout).toMatch(
      /rpc Connect \( stream \.scaleagent\.v1\.AgentMessage \) returns \( stream \.scaleagent\.v1\.ServerMessage \)/,
    );
    const health = await grpcurl(['-plaintext', server.grpcAddress, 'describe', 'grpc.health.v1.Health']);
    expect(health.stdout).toMatch(/rpc Check \( \.grpc\.health\.v1\.HealthCheckRequest \)/);
    // Hello carries map<string,string> identity: a map entry must be nested in the message that uses it.
    const hello = await grpcurl(['-plaintext', server.grpcAddress, 'describe', 'scaleagent.v1.AgentMessage']);
    expect(hello.stdout).toMatch(/\.scaleagent\.v1\.Hello hello = \d+;/);
    const helloMsg = await grpcurl(['-plaintext', server.grpcAddress, 'describe', 'scaleagent.v1.Hello']);
    expect(helloMsg.stdout).toMatch(/map<string, string> identity = 4;/);
  });

  it('answers health checks for the server and for AgentService', async () => {
    for (const service of ['', 'scaleagent.v1.AgentService']) {
      const { stdout } = await grpcurl([
        '-plaintext',
        '-d',
        JSON.stringify({ service }),
        server.grpcAddress,
        'grpc.health.v1.Health/Check',
      ]);
      expect(JSON.parse(stdout)).toEqual({ status: 'SERVING' });
    }
    const unknown = await grpcurl(
      ['-plaintext', '-d', '{"service":"no.such.Service"}', server.grpcAddress, 'grpc.health.v1.Health/Check'],
      { allowFail: true },
    );
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/NotFound/);
  });

  it('opens HTTP/2 windows on an agent stream as wide as the flow control it announces', async () => {
    // A raw HTTP/2 client, as the agent's grpc-js is one: with Node's default 64 KiB windows an agent sending an
    // initial sync waited for a WINDOW_UPDATE every 64 KiB (bench/profiles/initial-sync.md).
    const session = connect(`http://${server.grpcAddress}`);
    try {
      const settings: Settings[] = [];
      session.on('remoteSettings', (s) => settings.push(s));
      const stream = session.request({
        ':method': 'POST',
        ':path': '/scaleagent.v1.AgentService/Connect',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('error', () => undefined);
      // Defaults: limits.maxUnackedBytes 8 MiB, plus one message of limits.maxMessageBytes 16 MiB past it.
      const wanted = 8 * 1024 * 1024 + 16 * 1024 * 1024;
      await expect.poll(() => settings.at(-1)?.initialWindowSize).toBe(wanted);
      expect(session.state.remoteWindowSize).toBeGreaterThanOrEqual(wanted - 65_535);
      stream.close();
    } finally {
      session.destroy();
    }
  });
});
