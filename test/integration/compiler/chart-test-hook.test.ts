/**
 * The chart's `helm test` pod. This control plane runs no kubelet, so the pod cannot run here: it is rendered by the
 * real helm, admitted by the real API server under the restricted Pod Security Standard (server-side dry run), and
 * its command is run as a local process against a real plugin-server, which is what the pod would do in-cluster.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createNamespace, freePort, helm, kubectl, run } from '../../infra/index.js';
import { PluginServerProcess } from '../../infra/processes.js';

const CHART = new URL('../../../charts/scale-agent', import.meta.url).pathname;
const TEST_POD = 'templates/tests/plugin-server-readyz.yaml';

interface Pod {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec: { restartPolicy: string; containers: { command: string[] }[] };
}

interface Service {
  kind: string;
  metadata: { name: string };
  spec: { ports: { port: number }[] };
}

async function render(args: string[]): Promise<(Pod | Service)[]> {
  const { stdout } = await helm(['template', 'r', CHART, '--namespace', 'ns', ...args]);
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Pod | Service | null)
    .filter((o): o is Pod | Service => o !== null);
}

async function testPod(args: string[] = []): Promise<Pod> {
  const [pod] = (await render(['--set', 'pluginServer.enabled=true', '--show-only', TEST_POD, ...args])) as Pod[];
  return pod!;
}

let dir: string;
let server: PluginServerProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'scale-agent-helm-test-'));
  server = await PluginServerProcess.start({ dir });
});

afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('helm test pod', () => {
  it("is a test hook that asks the release's own REST Service for /readyz", async () => {
    const pod = await testPod();
    expect(pod.kind).toBe('Pod');
    expect(pod.metadata.annotations?.['helm.sh/hook']).toBe('test');
    expect(pod.spec.restartPolicy).toBe('Never');
    const url = pod.spec.containers[0]!.command.at(-1)!;
    const service = (await render(['--set', 'pluginServer.enabled=true', '--skip-tests'])).find(
      (o): o is Service => o.kind === 'Service' && !o.metadata.name.endsWith('-grpc'),
    );
    expect(url).toBe(`http://${service?.metadata.name}.ns.svc:${service?.spec.ports[0]?.port}/readyz`);
  });

  it('is not rendered without the plugin-server or with tests.enabled=false', async () => {
    const pods = async (args: string[]) =>
      (await render(['--set', 'agent.enabled=true', ...args])).filter((o) => o.kind === 'Pod');
    expect(await pods(['--set', 'pluginServer.enabled=true'])).toHaveLength(1);
    expect(await pods([])).toEqual([]);
    expect(await pods(['--set', 'pluginServer.enabled=true,tests.enabled=false'])).toEqual([]);
    const typo = await helm(['template', 'r', CHART, '--set', 'tests.enabeld=false'], { allowFail: true });
    expect(typo.code).not.toBe(0);
  });

  it('passes the restricted Pod Security Standard on a real API server', async () => {
    const ns = await createNamespace('helm-test-pss');
    try {
      await kubectl(['label', 'namespace', ns, 'pod-security.kubernetes.io/enforce=restricted']);
      const pod = await testPod(['--namespace', ns]);
      const ok = await kubectl(['apply', '--dry-run=server', '-n', ns, '-f', '-'], {
        input: JSON.stringify(pod),
        allowFail: true,
      });
      expect(ok.code, ok.stderr).toBe(0);
      // The check has teeth: the same pod without its pod-level securityContext is refused.
      const bad = { ...pod, spec: { ...pod.spec, securityContext: {} } };
      const refused = await kubectl(['apply', '--dry-run=server', '-n', ns, '-f', '-'], {
        input: JSON.stringify(bad),
        allowFail: true,
      });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/violates PodSecurity "restricted/);
    } finally {
      await kubectl(['delete', 'namespace', ns, '--wait=false']);
    }
  });

  it('its command succeeds against a ready plugin-server and fails against none', async () => {
    const [cmd, ...args] = (await testPod()).spec.containers[0]!.command;
    expect(cmd).toBe('node');
    const at = (url: string) => [...args.slice(0, -1), url];
    const ready = await run(process.execPath, at(`${server.httpBase}/readyz`), { allowFail: true });
    expect(ready.code, ready.stderr).toBe(0);
    expect(ready.stdout).toMatch(/^200 /);
    const none = await run(process.execPath, at(`http://127.0.0.1:${await freePort()}/readyz`), { allowFail: true });
    expect(none.code).toBe(1);
  });
});
