/**
 * The store-link tests' start: a second replica on the stack's MySQL database through a Toxiproxy link (named
 * `mysql`) the test can cut, HAProxy in front of both replicas, and an agent whose stream lands on the linked one:
 * the stack's first replica is down while the agent connects, and back once the linked replica holds the account.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from './index.js';
import type { PluginServerProcess } from './processes.js';
import { accountOn } from './replica-rest.js';
import type { Stack, StackAgentOptions } from './stack.js';
import { Toxiproxy } from './toxiproxy.js';

export async function agentOnLinkedReplica(
  stack: Stack,
  o: { replica: string; account: string; agent: StackAgentOptions },
): Promise<{ toxi: Toxiproxy; linked: PluginServerProcess }> {
  const { server: first, storage } = stack;
  if (storage.type !== 'mysql') throw new Error('a mysql stack without a database URL');
  const toxi = await Toxiproxy.start(stack.dir);
  stack.defer(() => toxi.stop());
  const viaProxy = new URL(storage.url);
  viaProxy.host = await toxi.createProxy('mysql', viaProxy.host);
  const linked = await stack.addReplica({ name: o.replica, storage: { type: 'mysql', url: viaProxy.toString() } });
  const lb = await stack.addLoadBalancer();

  await first.stop();
  await waitFor(`HAProxy to see only ${o.replica}`, async () =>
    (await fetch(`${lb.httpBase}/readyz`)).ok && !(await fetch(`${first.httpBase}/readyz`).catch(() => undefined))
      ? true
      : undefined,
  );
  await sleep(1000);
  await stack.addAgent(o.agent);
  await waitFor(`${o.replica} to hold ${o.account}`, async () =>
    (await accountOn(linked, o.account)).heldBy === 'local' ? true : undefined,
  );
  await first.restart();
  return { toxi, linked };
}
