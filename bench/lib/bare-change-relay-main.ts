/**
 * The floors of bench/live-cache.ts: scale-agent's paths from the API server to a cache a client can read (a watch
 * event, a new agent's initial sync), built from bare parts, one process per role as in a real install, and nothing
 * else.
 *
 * `front [mysql url]` (the plugin-server's place): a grpc-js server taking messages of `[{name, object}]` on bidi
 * streams and keeping each object by name, in a Map or, given a MySQL URL, as one row per object written by one
 * `INSERT … ON DUPLICATE KEY UPDATE` per message on one connection, in arrival order (its own commit, as a store must
 * before it acknowledges); `GET /obj/:name` answers the object (from the Map, or a point read by primary key).
 * `agent <grpc address> <kubeconfig> <namespace>` (the agent's place): a client-node watch on the namespace's
 * ConfigMaps, each event's object written down the stream as it arrives. `sync …` (a new agent's initial sync): see
 * sync() below.
 *
 * No checks, resourceVersion order, batching, acknowledgements, indexes, events, logging or metrics: what a change
 * costs above this is ours; what this costs above the bare watch is one more watch client, two processes and the
 * store's write and read, on this machine.
 *
 * `front` prints `<http base> <grpc address>`; `agent` prints `ready` once its watch is open; `sync` prints
 * `listing <Date.now()>` as it starts its LIST.
 */
import { createServer } from 'node:http';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { dialBidi, serveBidi } from './bare-grpc.js';
import { CoreV1Api, KubeConfig, Watch, type V1ConfigMap } from '@kubernetes/client-node';
import mysql from 'mysql2/promise';

const METHOD = '/bench.BareChangeRelay/Connect';

interface Objects {
  /** Keeps a message's objects: one write (one statement, its own commit) for them all. */
  put(batch: { name: string; object: string }[]): Promise<void>;
  get(name: string): Promise<string | undefined>;
}

function memoryObjects(): Objects {
  const map = new Map<string, string>();
  return {
    put: (batch) => {
      for (const { name, object } of batch) map.set(name, object);
      return Promise.resolve();
    },
    get: (name) => Promise.resolve(map.get(name)),
  };
}

async function mysqlObjects(url: string): Promise<Objects> {
  const writer = await mysql.createConnection(url);
  const readers = mysql.createPool({ uri: url, connectionLimit: 4 });
  await writer.query('DROP TABLE IF EXISTS bare_objects');
  await writer.query(
    'CREATE TABLE bare_objects (name VARCHAR(253) PRIMARY KEY, object LONGTEXT NOT NULL) ENGINE=InnoDB',
  );
  return {
    put: async (batch) => {
      if (batch.length === 0) return;
      await writer.query(
        'INSERT INTO bare_objects (name, object) VALUES ? ON DUPLICATE KEY UPDATE object = VALUES(object)',
        [batch.map(({ name, object }) => [name, object])],
      );
    },
    get: async (name) => {
      const [rows] = await readers.query<mysql.RowDataPacket[]>('SELECT object FROM bare_objects WHERE name = ?', [
        name,
      ]);
      return rows[0]?.object as string | undefined;
    },
  };
}

async function front(mysqlUrl: string | undefined): Promise<void> {
  const objects = mysqlUrl ? await mysqlObjects(mysqlUrl) : memoryObjects();
  // One write at a time, in arrival order, as one agent stream's changes must land.
  let writes = Promise.resolve();
  const grpcPort = await serveBidi(METHOD, (c: ServerDuplexStream<Buffer, Buffer>) => {
    c.on('data', (b: Buffer) => {
      const batch = JSON.parse(b.toString()) as { name: string; object: string }[];
      writes = writes.then(() => objects.put(batch));
      writes.catch((e: unknown) => {
        process.stderr.write(`bare change relay front: write failed: ${(e as Error).message}\n`);
        process.exit(1);
      });
    });
    c.on('error', () => undefined);
  });
  const http = createServer((req, res) => {
    const m = /^\/obj\/([^/]+)$/.exec(req.url ?? '');
    if (req.method !== 'GET' || !m) {
      res.writeHead(404).end(`${req.method} ${req.url}: no such route`);
      return;
    }
    objects.get(decodeURIComponent(m[1]!)).then(
      (o) => {
        if (o === undefined) res.writeHead(404).end();
        else res.writeHead(200, { 'content-type': 'application/json' }).end(o);
      },
      (e: unknown) => res.writeHead(500).end((e as Error).message),
    );
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
  const call = dialBidi(address, METHOD);
  call.on('error', (e) => {
    process.stderr.write(`bare change relay agent: stream failed: ${e.message}\n`);
    process.exit(1);
  });
  await new Watch(kc).watch(
    `/api/v1/namespaces/${namespace}/configmaps`,
    { allowWatchBookmarks: false },
    (_phase: string, obj: V1ConfigMap) => {
      const name = obj.metadata?.name;
      if (name) call.write(Buffer.from(JSON.stringify([{ name, object: JSON.stringify(obj) }])));
    },
    (e: unknown) => {
      if (e) process.stderr.write(`bare change relay agent: watch ended: ${(e as Error).message}\n`);
      process.exit(1);
    },
  );
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => process.exit(0));
}

/**
 * The initial sync's floor: a new process lists the namespace's ConfigMaps in pages of 500 (the benchmark's bare
 * LIST, same client) and writes each page down the stream as one message, which the front keeps as one write.
 * Each object is kept as `<prefix>.<name>`: every round writes new rows, as ours syncs a new account each round.
 * Prints `listing <Date.now()>` once its stream is up, just before the LIST (where ours is timed from: the agent's
 * Welcome), and `listed <count>` after the last page was written.
 */
async function sync(address: string, kubeconfig: string, namespace: string, prefix: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const call = dialBidi(address, METHOD);
  call.on('error', (e) => {
    process.stderr.write(`bare sync: stream failed: ${e.message}\n`);
    process.exit(1);
  });
  // grpc-js opens the stream lazily: an empty batch makes it so before the clock starts.
  await new Promise<void>((resolve) => call.write(Buffer.from('[]'), () => resolve()));
  process.stdout.write(`listing ${Date.now()}\n`);
  let count = 0;
  let cont: string | undefined;
  do {
    const page = await core.listNamespacedConfigMap({ namespace, limit: 500, _continue: cont });
    const batch = page.items.map((o) => ({ name: `${prefix}.${o.metadata!.name!}`, object: JSON.stringify(o) }));
    call.write(Buffer.from(JSON.stringify(batch)));
    count += batch.length;
    cont = page.metadata?._continue || undefined;
  } while (cont);
  process.stdout.write(`listed ${count}\n`);
  process.on('SIGTERM', () => process.exit(0));
}

const [role, ...args] = process.argv.slice(2);
if (role === 'front' && args.length <= 1) await front(args[0]);
else if (role === 'agent' && args.length === 3) await agent(args[0]!, args[1]!, args[2]!);
else if (role === 'sync' && args.length === 4) await sync(args[0]!, args[1]!, args[2]!, args[3]!);
else
  throw new Error(
    'usage: bare-change-relay-main.ts front [mysql url] | agent <grpc address> <kubeconfig> <namespace> | sync <grpc address> <kubeconfig> <namespace> <prefix>',
  );
