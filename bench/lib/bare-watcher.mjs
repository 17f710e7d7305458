/**
 * The agent-memory baseline: a bare Node process holding `count` plain watch connections (HTTPS, one TLS
 * connection each, as any watch client would) on the ConfigMaps of one namespace, reading and discarding what
 * arrives. It lists nothing and keeps nothing, so its RSS is what Node, TLS and idle watches cost on their own;
 * the agent's RSS above it is ours. Plain JavaScript with node: modules only (no tsx, no client-node), so nothing
 * loaded here inflates the baseline. Prints "ready" once every watch has its response headers.
 *
 * Usage: node bench/lib/bare-watcher.mjs <connection.json> <namespace> <count>
 * connection.json: { host, port, ca, cert, key, headers } (PEM strings), written by the benchmark from the kubeconfig.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import process from 'node:process';

const [connFile, namespace, countArg] = process.argv.slice(2);
const count = Number(countArg);
const conn = JSON.parse(readFileSync(connFile, 'utf8'));
const agent = new https.Agent({ keepAlive: true, maxSockets: count, ca: conn.ca, cert: conn.cert, key: conn.key });

const get = (path) =>
  new Promise((resolve, reject) => {
    const req = https.request({ host: conn.host, port: conn.port, path, agent, headers: conn.headers }, resolve);
    req.on('error', reject);
    req.end();
  });

const base = `/api/v1/namespaces/${namespace}/configmaps`;
// The current resourceVersion from a one-item list, so the watches start at "now" without an initial list.
const first = await get(`${base}?limit=1`);
let body = '';
for await (const chunk of first) body += String(chunk);
const rv = JSON.parse(body).metadata.resourceVersion;

await Promise.all(
  Array.from({ length: count }, async () => {
    const res = await get(`${base}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=3600`);
    if (res.statusCode !== 200) throw new Error(`watch: HTTP ${res.statusCode}`);
    res.resume();
  }),
);
process.stdout.write('ready\n');
process.on('SIGTERM', () => process.exit(0));
