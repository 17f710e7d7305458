/**
 * The project's image, built from the repository's Dockerfile (tools/image/build.sh), run without a node: its root
 * filesystem in containers started by runc as the generated pods ask for them — their user, a read-only root, no
 * capabilities, no privilege escalation, the agent's jemalloc settings, config files mounted read-only — on the
 * host's network so the test reaches the ports. The plugin-server and an agent from the image serve a static
 * account and a dynamic one given as kubeconfig contents (which the agent once wrote under a read-only /tmp, and
 * crash-looped). Real runc, real control plane; builds the image when the cache has none (minutes, once).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { Container, projectImage, unpackImage, type ImageConfig, type RunningContainer } from '../../infra/image.js';
import { createNamespace, createServiceAccount, freePort, kubectl, testEnv, waitFor } from '../../infra/index.js';

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const dir = mkdtempSync(join(tmpdir(), 'sa-image-'));
let image: { rootfs: string; config: ImageConfig };
let ref: string;

interface PodContainer {
  env?: { name: string; value?: string }[];
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
}
interface PodTemplate {
  spec: {
    template: { spec: { securityContext: { runAsUser: number; runAsGroup: number }; containers: PodContainer[] } };
  };
}

/** How the generated install runs a component's container (kustomize/base, generated from the one model). */
function podSettings(component: 'agent' | 'plugin-server') {
  const deployment = parse(
    readFileSync(join(ROOT, `kustomize/base/${component}/deployment.yaml`), 'utf8'),
  ) as PodTemplate;
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0]!;
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  return {
    user: { uid: pod.securityContext.runAsUser, gid: pod.securityContext.runAsGroup },
    readOnlyRootFilesystem: container.securityContext?.readOnlyRootFilesystem ?? false,
    env,
  };
}

beforeAll(async () => {
  const built = await projectImage();
  ref = built.ref;
  image = await unpackImage(built.archive, join(dir, 'image'));
}, 30 * 60_000);

describe('the image', () => {
  it('is tagged as the generated installs reference it and runs as uid 1000 by default', () => {
    expect(ref).toBe(`ghcr.io/scale-agent/scale-agent:${VERSION}`);
    expect(image.config.user).toBe('1000:1000');
    expect(image.config.entrypoint).toEqual(['node', '/app/bin/run.js']);
  });

  it('runs scale-agent --version and --help as its own user with a read-only root', async () => {
    const version = await Container.run(image, dir, { args: ['--version'], readOnlyRootFilesystem: true });
    expect(version.stderr).toBe('');
    expect(version.code).toBe(0);
    expect(version.stdout).toContain(`scale-agent/${VERSION} linux-`);
    const help = await Container.run(image, dir, { args: ['--help'], readOnlyRootFilesystem: true });
    expect(help.code).toBe(0);
    for (const command of ['agent', 'plugin-server', 'synth', 'check', 'certs', 'status']) {
      expect(help.stdout).toMatch(new RegExp(`^\\s+${command}\\s`, 'm'));
    }
  });

  it("runs as the generated pods' user (no passwd entry), every file it needs readable by that user", async () => {
    const pod = podSettings('agent');
    expect(pod.user.uid).not.toBe(1000);
    expect(pod.readOnlyRootFilesystem).toBe(true);
    const version = await Container.run(image, dir, { ...pod, args: ['--version'] });
    expect(version.code).toBe(0);
    expect(version.stdout).toContain(`scale-agent/${VERSION}`);
    // Anything under /app (or Node itself) that this uid cannot read, or a directory it cannot enter.
    const unreadable = await Container.run(image, dir, {
      ...pod,
      command: ['find', '/app', '/usr/local/bin/node', '/usr/local/lib/libjemalloc.so.2', '-follow'],
      args: ['(', '!', '-readable', '-o', '-type', 'd', '!', '-executable', ')', '-print'],
    });
    expect(unreadable.stderr).toBe('');
    expect(unreadable.stdout).toBe('');
    expect(unreadable.code).toBe(0);
  });

  it("loads jemalloc through the agent pod's LD_PRELOAD (and not without it)", async () => {
    const pod = podSettings('agent');
    expect(pod.env.LD_PRELOAD).toBe('/usr/local/lib/libjemalloc.so.2');
    const maps = ['node', '-e', "process.stdout.write(require('fs').readFileSync('/proc/self/maps', 'utf8'))"];
    const withJemalloc = await Container.run(image, dir, { ...pod, command: maps, args: [] });
    expect(withJemalloc.stderr).toBe('');
    expect(withJemalloc.stdout).toMatch(/libjemalloc\.so\.2/);
    const { LD_PRELOAD: _preload, ...withoutPreload } = pod.env;
    const plain = await Container.run(image, dir, { ...pod, env: withoutPreload, command: maps, args: [] });
    expect(plain.code).toBe(0);
    expect(plain.stdout).not.toMatch(/libjemalloc/);
  });

  it('cannot write to its root filesystem as the pods run it', async () => {
    const pod = podSettings('plugin-server');
    const touch = await Container.run(image, dir, { ...pod, command: ['touch', '/tmp/x'], args: [] });
    expect(touch.code).not.toBe(0);
    expect(touch.stderr).toMatch(/Read-only file system/);
  });
});

describe('the plugin-server and an agent from the image', () => {
  const running: RunningContainer[] = [];
  let httpBase: string;
  let ns: string;
  let agentAdmin: string;

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(httpBase + path, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as unknown };
  };
  const cached = async (account: string): Promise<string[]> => {
    const r = await api('GET', `/admin/cache/${account}?kind=ConfigMap`);
    return r.status === 200 ? (r.body as { name: string }[]).map((o) => o.name) : [];
  };

  beforeAll(async () => {
    ns = await createNamespace('image');
    await kubectl(['create', 'configmap', 'from-image', '-n', ns, '--from-literal=k=v']);
    const serverConfig = join(dir, 'server-config');
    const agentConfig = join(dir, 'agent-config');
    mkdirSync(serverConfig);
    mkdirSync(agentConfig);
    const [grpcPort, httpPort, adminPort] = [await freePort(), await freePort(), await freePort()];
    writeFileSync(join(serverConfig, 'dynamic.key'), randomBytes(32).toString('base64'));
    writeFileSync(
      join(serverConfig, 'config.yaml'),
      stringify({
        grpc: { host: '127.0.0.1', port: grpcPort },
        http: { host: '127.0.0.1', port: httpPort },
        storage: { type: 'memory' },
        dynamicAccounts: { encryptionKeyFile: '/etc/scale-agent/config/dynamic.key' },
      }),
    );
    writeFileSync(join(agentConfig, 'admin.kubeconfig'), readFileSync(testEnv().kubeconfig));
    writeFileSync(
      join(agentConfig, 'config.yaml'),
      stringify({
        server: { address: `127.0.0.1:${grpcPort}`, insecure: true, backoff: { maxDelaySeconds: 2 } },
        agentId: 'image-agent',
        admin: { host: '127.0.0.1', port: adminPort },
        kubernetes: {
          accounts: [
            {
              name: 'image-static',
              kubeconfigFile: '/etc/scale-agent/config/admin.kubeconfig',
              namespaces: [ns],
              kinds: ['ConfigMap'],
            },
          ],
        },
      }),
    );
    httpBase = `http://127.0.0.1:${httpPort}`;
    agentAdmin = `http://127.0.0.1:${adminPort}`;
    const mount = (source: string) => [{ source, destination: '/etc/scale-agent/config', readOnly: true }];
    const started = Date.now();
    running.push(
      Container.start(
        image,
        dir,
        {
          ...podSettings('plugin-server'),
          args: ['plugin-server', '--config', '/etc/scale-agent/config/config.yaml'],
          mounts: mount(serverConfig),
        },
        join(dir, 'plugin-server.log'),
      ),
    );
    await waitFor('plugin-server /readyz', async () => (await fetch(`${httpBase}/readyz`)).ok, 60_000);
    console.info(`[image] plugin-server container ready ${Date.now() - started} ms after start`);
    const agentStarted = Date.now();
    running.push(
      Container.start(
        image,
        dir,
        {
          ...podSettings('agent'),
          args: ['agent', '--config', '/etc/scale-agent/config/config.yaml'],
          mounts: mount(agentConfig),
        },
        join(dir, 'agent.log'),
      ),
    );
    await waitFor('agent /readyz', async () => (await fetch(`${agentAdmin}/readyz`)).ok, 90_000);
    console.info(`[image] agent container ready (account synced) ${Date.now() - agentStarted} ms after start`);
  }, 180_000);

  afterAll(async () => {
    for (const c of running.reverse()) await c.stop();
  });

  it('serve a static account and a dynamic one from kubeconfig contents, under a read-only root', async () => {
    await waitFor('static account cached', async () => (await cached('image-static')).includes('from-image'));
    const sa = await createServiceAccount({
      namespace: ns,
      name: 'image-reader',
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });
    const created = await api('POST', '/armory/accounts/dynamic', {
      name: 'image-dynamic',
      kubeconfigContents: readFileSync(sa.kubeconfigPath, 'utf8'),
      namespaces: [ns],
      kinds: ['ConfigMap'],
    });
    expect(created.status).toBe(201);
    await waitFor('dynamic account cached', async () => (await cached('image-dynamic')).includes('from-image'));
    await kubectl(['create', 'configmap', 'later', '-n', ns, '--from-literal=k=v']);
    await waitFor('both accounts stream', async () => {
      const [a, b] = await Promise.all([cached('image-static'), cached('image-dynamic')]);
      return a.includes('later') && b.includes('later');
    });
    for (const c of running) c.proc.assertRunning();
  });
});
