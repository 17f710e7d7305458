/**
 * The project's image for tests: built from the repository's Dockerfile by tools/image/build.sh (cached by a key
 * of its inputs), unpacked into a root filesystem, and run as a container by runc (Debian's), with the user,
 * read-only root, capabilities and mounts a test gives — the settings the generated pods ask a kubelet for — and
 * no image registry or container engine anywhere.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run, type RunResult } from './exec.js';
import { ServerProcess } from './processes-group.js';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export interface ProjectImage {
  /** A docker-archive tarball (`ctr -n k8s.io images import` and `docker load` take it). */
  archive: string;
  /** The reference it is tagged with: what the generated installs run. */
  ref: string;
}

const built = new Map<string, Promise<ProjectImage>>();

/** tools/image/build.sh with its arguments (none: the project's image), once per process. */
function buildImage(args: string[]): Promise<ProjectImage> {
  const key = args.join(' ');
  let image = built.get(key);
  if (!image) {
    image = run('bash', [join(ROOT, 'tools/image/build.sh'), ...args], { timeoutMs: 30 * 60_000 }).then(
      ({ stdout }) => {
        const [archive, ref] = stdout.trim().split('\n').at(-1)!.split(' ');
        if (!archive || !ref) throw new Error(`tools/image/build.sh printed no archive and reference:\n${stdout}`);
        return { archive, ref };
      },
    );
    built.set(key, image);
  }
  return image;
}

/** Builds the image (or takes it from the cache: about a second when nothing changed). Needs root. */
export function projectImage(): Promise<ProjectImage> {
  return buildImage([]);
}

/**
 * MariaDB (Debian's mariadb-server) as an image, for installs that run the plugin-server on MySQL inside the real
 * node's cluster: built by the same script on the same base (about two minutes cold, then cached).
 */
export const MARIADB_IMAGE = 'localhost/scale-agent-test/mariadb:10.11';
export function mariadbImage(): Promise<ProjectImage> {
  return buildImage([join(ROOT, 'test/infra/real-node/mariadb.Dockerfile'), MARIADB_IMAGE]);
}

/** The parts of an image's config that say how to run it. */
export interface ImageConfig {
  entrypoint: string[];
  cmd: string[];
  env: string[];
  user: string;
  workingDir: string;
}

/**
 * Unpacks a docker-archive into `dir`/rootfs, layer by layer, applying each layer's whiteouts (`.wh.<name>` removes
 * a file of the layers below, `.wh..wh..opq` empties its directory) before extracting the layer's own files.
 */
export async function unpackImage(archive: string, dir: string): Promise<{ rootfs: string; config: ImageConfig }> {
  const meta = join(dir, 'archive');
  const rootfs = join(dir, 'rootfs');
  mkdirSync(meta, { recursive: true });
  mkdirSync(rootfs, { recursive: true });
  await run('tar', ['-xf', archive, '-C', meta, 'manifest.json']);
  const [manifest] = JSON.parse(readFileSync(join(meta, 'manifest.json'), 'utf8')) as {
    Config: string;
    Layers: string[];
  }[];
  if (!manifest) throw new Error(`${archive}: no image in manifest.json`);
  await run('tar', ['-xf', archive, '-C', meta, manifest.Config, ...manifest.Layers]);
  for (const layer of manifest.Layers) {
    const file = join(meta, layer);
    const entries = (await run('tar', ['-tf', file], { timeoutMs: 300_000 })).stdout.split('\n');
    for (const entry of entries) {
      const path = entry.replace(/^\.\//, '');
      const base = path.split('/').at(-1) ?? '';
      if (!base.startsWith('.wh.')) continue;
      const parent = join(rootfs, path.slice(0, path.length - base.length));
      if (base === '.wh..wh..opq') await run('find', [parent, '-mindepth', '1', '-delete'], { allowFail: true });
      else await run('rm', ['-rf', join(parent, base.slice('.wh.'.length))]);
    }
    await run('tar', ['-xf', file, '-C', rootfs, '--exclude=.wh.*', '--numeric-owner'], { timeoutMs: 300_000 });
  }
  const config = JSON.parse(readFileSync(join(meta, manifest.Config), 'utf8')) as {
    config: { Entrypoint?: string[]; Cmd?: string[]; Env?: string[]; User?: string; WorkingDir?: string };
  };
  await run('rm', ['-rf', meta]);
  const c = config.config;
  return {
    rootfs,
    config: {
      entrypoint: c.Entrypoint ?? [],
      cmd: c.Cmd ?? [],
      env: c.Env ?? [],
      user: c.User ?? '',
      workingDir: c.WorkingDir || '/',
    },
  };
}

/** How to run the image: what a pod spec's container and securityContext would say. */
export interface ContainerSpec {
  /** Replaces the image's CMD (a container's `args`). */
  args?: string[];
  /** Replaces the image's ENTRYPOINT (a container's `command`). */
  command?: string[];
  /** Added to the image's environment. */
  env?: Record<string, string>;
  /** Default: the image's USER (numeric uid:gid). */
  user?: { uid: number; gid: number };
  readOnlyRootFilesystem?: boolean;
  /** Bind mounts from the host. */
  mounts?: { source: string; destination: string; readOnly?: boolean }[];
}

let counter = 0;

/**
 * A container of an unpacked image, run by runc with the host's network (a test reaches its ports on loopback),
 * its own mount, PID, IPC and UTS namespaces, no capabilities and no_new_privs (the generated pods drop ALL and
 * forbid privilege escalation). runc keeps its state in `dir`, apart from any containerd on the machine.
 */
export class Container {
  private constructor(
    readonly id: string,
    private readonly stateDir: string,
    readonly bundle: string,
  ) {}

  private static prepare(image: { rootfs: string; config: ImageConfig }, dir: string, spec: ContainerSpec): Container {
    const id = `sa-test-${process.pid}-${++counter}`;
    const bundle = join(dir, id);
    mkdirSync(bundle, { recursive: true });
    const [uid, gid] = spec.user
      ? [spec.user.uid, spec.user.gid]
      : image.config.user.split(':').map((n) => Number(n || 0));
    const env = new Map(image.config.env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
    for (const [k, v] of Object.entries(spec.env ?? {})) env.set(k, v);
    const args = [...(spec.command ?? image.config.entrypoint), ...(spec.args ?? image.config.cmd)];
    const config = {
      ociVersion: '1.0.2',
      process: {
        terminal: false,
        user: { uid, gid },
        args,
        env: [...env].map(([k, v]) => `${k}=${v}`),
        cwd: image.config.workingDir,
        capabilities: { bounding: [], effective: [], permitted: [], inheritable: [], ambient: [] },
        noNewPrivileges: true,
      },
      root: { path: resolve(image.rootfs), readonly: spec.readOnlyRootFilesystem ?? false },
      hostname: id,
      mounts: [
        { destination: '/proc', type: 'proc', source: 'proc' },
        {
          destination: '/dev',
          type: 'tmpfs',
          source: 'tmpfs',
          options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'],
        },
        {
          destination: '/dev/pts',
          type: 'devpts',
          source: 'devpts',
          options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620'],
        },
        {
          destination: '/dev/shm',
          type: 'tmpfs',
          source: 'shm',
          options: ['nosuid', 'noexec', 'nodev', 'size=65536k'],
        },
        { destination: '/sys', type: 'bind', source: '/sys', options: ['rbind', 'nosuid', 'noexec', 'nodev', 'ro'] },
        ...(spec.mounts ?? []).map((m) => ({
          destination: m.destination,
          type: 'bind',
          source: resolve(m.source),
          options: ['rbind', m.readOnly ? 'ro' : 'rw'],
        })),
      ],
      linux: {
        namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }],
        maskedPaths: ['/proc/kcore', '/proc/keys', '/proc/timer_list', '/proc/sched_debug', '/sys/firmware'],
        readonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
      },
    };
    writeFileSync(join(bundle, 'config.json'), JSON.stringify(config, null, 2));
    return new Container(id, join(dir, 'runc-state'), bundle);
  }

  private runcArgs(...args: string[]): string[] {
    return ['--root', this.stateDir, ...args];
  }

  /** Runs the container to completion and returns its exit code and output. */
  static async run(
    image: { rootfs: string; config: ImageConfig },
    dir: string,
    spec: ContainerSpec,
  ): Promise<RunResult> {
    const c = Container.prepare(image, dir, spec);
    try {
      return await run('runc', c.runcArgs('run', '--bundle', c.bundle, c.id), { allowFail: true });
    } finally {
      await run('runc', c.runcArgs('delete', '--force', c.id), { allowFail: true });
    }
  }

  /** Starts a long-running container; its output goes to `logFile`. */
  static start(
    image: { rootfs: string; config: ImageConfig },
    dir: string,
    spec: ContainerSpec,
    logFile: string,
  ): RunningContainer {
    const c = Container.prepare(image, dir, spec);
    const proc = ServerProcess.start(c.id, 'runc', c.runcArgs('run', '--bundle', c.bundle, c.id), logFile);
    return new RunningContainer(c, proc);
  }

  /** Signals the container's processes through runc (they are not in the runc process's group). */
  async kill(signal: string): Promise<void> {
    await run('runc', this.runcArgs('kill', '--all', this.id, signal), { allowFail: true });
  }

  async delete(): Promise<void> {
    await run('runc', this.runcArgs('delete', '--force', this.id), { allowFail: true });
  }
}

export class RunningContainer {
  constructor(
    readonly container: Container,
    readonly proc: ServerProcess,
  ) {}

  /** SIGTERM as the kubelet sends it, then runc's own cleanup (cgroups, mounts, state). */
  async stop(): Promise<void> {
    await this.container.kill('TERM');
    await this.proc.stop(10_000);
    await this.container.delete();
  }
}
