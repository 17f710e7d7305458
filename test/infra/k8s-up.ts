/**
 * `npm run k8s:up -- --dir DIR`: starts the test control plane by hand, writes DIR/kubeconfig (admin) and
 * stays in the foreground until interrupted, then stops everything.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { ControlPlane } from './control-plane.js';

const { values } = parseArgs({ options: { dir: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
if (values.help || !values.dir) {
  console.error('usage: npm run k8s:up -- --dir DIR\n\nStarts etcd, kube-apiserver and kube-controller-manager on');
  console.error('free loopback ports with their data in DIR, writes DIR/kubeconfig (admin) and runs until Ctrl-C.');
  process.exit(values.help ? 0 : 1);
}
const dir = resolve(values.dir);
const cp = await ControlPlane.start({ dir, log: (l) => console.error(`[k8s:up] ${l}`) });
console.error(`[k8s:up] ready: export KUBECONFIG=${cp.kubeconfig}   (binaries in ${cp.binDir})`);
console.error('[k8s:up] press Ctrl-C to stop');
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  console.error('[k8s:up] stopping...');
  await cp.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);
