/**
 * The relay floor of bench/operations.ts: scale-agent's operation path built from bare parts, one process per role as
 * in a real install, and nothing else. `front` (the plugin-server's place): a node:http server whose `POST /ops`
 * answers `{id}` and writes `{id, image}` down a grpc-js bidi stream, and whose `GET /task/:id` answers
 * `{completed, applyMs, doneAt}`. `agent` (the agent's place): dials the front, and for each message applies the
 * Deployment over one warm node:http2 connection (bare-apply.ts) and writes `{id, applyMs}` back. No validation,
 * task store, cache, consistency barrier, logging or metrics: what a deploy costs above this is ours, and what this
 * costs above the bare apply is the REST round trip and the two stream hops themselves, on this machine.
 *
 * `front` prints `<http base> <grpc address>`; `agent <grpc address> <kubeconfig> <namespace>` prints `ready`.
 */
import { createServer } from 'node:http';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { dialBidi, serveBidi } from './bare-grpc.js';
import { KubeConfig } from '@kubernetes/client-node';
import { bareHttp2Applier } from './bare-apply.js';

const METHOD = '/bench.BareRelay/Connect';
const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

async function front(): Promise<void> {
  let connected!: (c: ServerDuplexStream<Buffer, Buffer>) => void;
  const call = new Promise<ServerDuplexStream<Buffer, Buffer>>((resolve) => (connected = resolve));
  /** id → the agent's apply time (ms) and when its result arrived (Date.now()); undefined while running. */
  const done = new Map<string, { applyMs: number; doneAt: number } | undefined>();
  let next = 0;
  const grpcPort = await serveBidi(METHOD, (c: ServerDuplexStream<Buffer, Buffer>) => {
    connected(c);
    c.on('data', (b: Buffer) => {
      const { id, applyMs } = JSON.parse(b.toString()) as { id: string; applyMs: number };
      done.set(id, { applyMs, doneAt: Date.now() });
    });
    c.on('error', () => undefined);
  });
  const http = createServer((req, res) => {
    const answer = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (req.method === 'POST' && req.url === '/ops') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const { image } = JSON.parse(Buffer.concat(chunks).toString()) as { image: string };
        const id = String(++next);
        done.set(id, undefined);
        // Before the agent's stream is up (the first run only), the operation waits for it, as ours waits for a session.
        void call.then((c) => {
          c.write(json({ id, image }));
          answer(200, { id });
        });
      });
      return;
    }
    const task = /^\/task\/(\d+)$/.exec(req.url ?? '');
    if (req.method === 'GET' && task && done.has(task[1]!)) {
      const d = done.get(task[1]!);
      return answer(200, { completed: d !== undefined, ...d });
    }
    answer(404, { error: `${req.method} ${req.url}: no such route or task` });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const address = http.address();
  if (address === null || typeof address === 'string') throw new Error('front: no TCP address');
  process.stdout.write(`http://127.0.0.1:${address.port} 127.0.0.1:${grpcPort}\n`);
  process.on('SIGTERM', () => process.exit(0));
}

async function agent(address: string, kubeconfig: string, namespace: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const applier = await bareHttp2Applier(kc, namespace, 'relay');
  const call = dialBidi(address, METHOD);
  call.on('data', (b: Buffer) => {
    const { id, image } = JSON.parse(b.toString()) as { id: string; image: string };
    const t0 = performance.now();
    applier.apply(image).then(
      () => call.write(json({ id, applyMs: performance.now() - t0 })),
      (e: unknown) => {
        process.stderr.write(`bare relay agent: ${(e as Error).message}\n`);
        process.exit(1);
      },
    );
  });
  call.on('error', (e) => {
    process.stderr.write(`bare relay agent: stream failed: ${e.message}\n`);
    process.exit(1);
  });
  // grpc-js opens the stream lazily: the first write makes the front see the call.
  call.write(json({ id: 'hello' }));
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => process.exit(0));
}

const [role, ...args] = process.argv.slice(2);
if (role === 'front') await front();
else if (role === 'agent' && args.length === 3) await agent(args[0]!, args[1]!, args[2]!);
else throw new Error('usage: bare-relay-main.ts front | agent <grpc address> <kubeconfig> <namespace>');
