/**
 * The change→cache floor of bench/live-cache.ts: scale-agent's path from a watch event to a cache a client can read,
 * built from bare parts, one process per role as in a real install, and nothing else.
 *
 * `front [mysql url]` (the plugin-server's place): a grpc-js server taking `{name, object}` messages on one bidi
 * stream and keeping each object by name, in a Map or, given a MySQL URL, as one row per object written by one
 * `INSERT … ON DUPLICATE KEY UPDATE` per message on one connection, in arrival order (its own commit, as a store must
 * before it acknowledges); `GET /obj/:name` answers the object (from the Map, or a point read by primary key).
 * `agent <grpc address> <kubeconfig> <namespace>` (the agent's place): a client-node watch on the namespace's
 * ConfigMaps, each event's object written down the stream as it arrives.
 *
 * No checks, resourceVersion order, batching, acknowledgements, indexes, events, logging or metrics: what a change
 * costs above this is ours; what this costs above the bare watch is one more watch client, two processes and the
 * store's write and read, on this machine.
 *
 * `front` prints `<http base> <grpc address>`; `agent` prints `ready` once its watch is open.
 */
import { createServer } from 'node:http';
import {
  Server,
  ServerCredentials,
  credentials,
  makeGenericClientConstructor,
  type ClientDuplexStream,
  type ServerDuplexStream,
} from '@grpc/grpc-js';
import { KubeConfig, Watch, type V1ConfigMap } from '@kubernetes/client-node';
import mysql from 'mysql2/promise';

const METHOD = '/bench.BareChangeRelay/Connect';
const identity = (b: Buffer): Buffer => b;

interface Objects {
  put(name: string, object: string): Promise<void>;
  get(name: string): Promise<string | undefined>;
}

function memoryObjects(): Objects {
  const map = new Map<string, string>();
  return {
    put: (name, object) => {
      map.set(name, object);
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
    put: async (name, object) => {
      await writer.query(
        'INSERT INTO bare_objects (name, object) VALUES (?, ?) ON DUPLICATE KEY UPDATE object = VALUES(object)',
        [name, object],
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
  const grpc = new Server();
  grpc.register(
    METHOD,
    (c: ServerDuplexStream<Buffer, Buffer>) => {
      c.on('data', (b: Buffer) => {
        const { name, object } = JSON.parse(b.toString()) as { name: string; object: string };
        writes = writes.then(
          () => objects.put(name, object),
          () => objects.put(name, object),
        );
        writes.catch((e: unknown) => {
          process.stderr.write(`bare change relay front: write failed: ${(e as Error).message}\n`);
          process.exit(1);
        });
      });
      c.on('error', () => undefined);
    },
    identity,
    identity,
    'bidi',
  );
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
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
  const Client = makeGenericClientConstructor({}, 'BareChangeRelay');
  const client = new Client(address, credentials.createInsecure());
  const call: ClientDuplexStream<Buffer, Buffer> = client.makeBidiStreamRequest(METHOD, identity, identity);
  call.on('error', (e) => {
    process.stderr.write(`bare change relay agent: stream failed: ${e.message}\n`);
    process.exit(1);
  });
  await new Watch(kc).watch(
    `/api/v1/namespaces/${namespace}/configmaps`,
    { allowWatchBookmarks: false },
    (_phase: string, obj: V1ConfigMap) => {
      const name = obj.metadata?.name;
      if (name) call.write(Buffer.from(JSON.stringify({ name, object: JSON.stringify(obj) })));
    },
    (e: unknown) => {
      if (e) process.stderr.write(`bare change relay agent: watch ended: ${(e as Error).message}\n`);
      process.exit(1);
    },
  );
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => process.exit(0));
}

const [role, ...args] = process.argv.slice(2);
if (role === 'front' && args.length <= 1) await front(args[0]);
else if (role === 'agent' && args.length === 3) await agent(args[0]!, args[1]!, args[2]!);
else
  throw new Error('usage: bare-change-relay-main.ts front [mysql url] | agent <grpc address> <kubeconfig> <namespace>');
