import type { ErrorDetail } from '../shared/errors.js';
import type { LoadedYaml } from './load.js';
import { resolveKind } from './kinds.js';
import type { TopologyInput } from './topology.js';

/**
 * Rules the schema cannot say. Runs only on schema-valid input and reports every problem, each located.
 */
export function semanticErrors(t: TopologyInput, src: LoadedYaml): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  const err = (path: string, message: string): void => void out.push(src.detail(path, message));
  const ps = t.pluginServer;
  const exposure = ps.grpc?.exposure?.type ?? 'ClusterIP';

  if ((ps.replicas ?? 1) > 1 && (ps.storage?.type ?? 'memory') === 'memory') {
    err(
      '/pluginServer/replicas',
      'more than one replica needs storage.type mysql or postgres (the memory store is per replica)',
    );
  }
  if (ps.peerSecret && (ps.storage?.type ?? 'memory') === 'memory') {
    err(
      '/pluginServer/peerSecret',
      'peerSecret needs storage.type mysql or postgres (one replica on the memory store has no peers)',
    );
  }
  const remote = t.agents.findIndex((a) => a.mode !== 'service');
  const lb = ps.grpc?.exposure;
  if (remote >= 0 && lb?.type === 'LoadBalancer' && lb.address === undefined) {
    err(
      '/pluginServer/grpc/exposure',
      `agents outside the plugin-server's cluster (${t.agents[remote]?.name}) need exposure.address, the DNS name ` +
        'they dial (it also goes into the server certificate)',
    );
  }

  // accountPattern steers Orca's shards; in front mode there are none, and a pattern there would be silently unused.
  if (t.spinnaker?.accountPattern !== undefined && (t.spinnaker.mode ?? 'front') === 'front') {
    err('/spinnaker/accountPattern', "accountPattern applies to mode 'orca-only' only (front mode routes by itself)");
  }

  const sp = t.spinnaker;
  if (sp && !sp.upstream) {
    // Without a Clouddriver there is nothing to stand in front of or to route around.
    if (sp.mode !== undefined)
      err('/spinnaker/mode', `mode '${sp.mode}' needs spinnaker.upstream (the existing Clouddriver)`);
    if (sp.accountPattern !== undefined)
      err('/spinnaker/upstream', "accountPattern needs spinnaker.upstream and mode 'orca-only'");
  }
  const artifacts = sp?.artifacts?.http ?? [];
  // As the plugin-server refuses at start: in front mode Clouddriver's artifact accounts fetch, and Deck lists those.
  if (sp?.upstream && (sp.mode ?? 'front') === 'front' && artifacts.length > 0) {
    err(
      '/spinnaker/artifacts/http',
      'artifact accounts are for a plugin-server without a Clouddriver behind it; in front mode (the default with ' +
        "upstream) Clouddriver's artifact accounts fetch: declare them there, or use mode 'orca-only' or no upstream",
    );
  }
  const artifactNames = new Map<string, string>();
  artifacts.forEach((h, i) => {
    const p = `/spinnaker/artifacts/http/${i}`;
    const prev = artifactNames.get(h.name);
    if (prev !== undefined) err(`${p}/name`, `artifact account name '${h.name}' is already used at ${prev}`);
    // The account embedded/base64 artifacts are served under, by Clouddriver and the plugin-server alike.
    else if (h.name === 'embedded-artifact')
      err(`${p}/name`, "'embedded-artifact' is the embedded/base64 account's name");
    else artifactNames.set(h.name, `${p}/name`);
    if (h.usernamePasswordSecret && h.tokenSecret) {
      err(`${p}/tokenSecret`, 'give one of usernamePasswordSecret and tokenSecret, not both');
    }
  });

  const agentNames = new Map<string, string>();
  const accountNames = new Map<string, string>();
  t.agents.forEach((agent, i) => {
    const ap = `/agents/${i}`;
    const prevAgent = agentNames.get(agent.name);
    if (prevAgent !== undefined) {
      err(`${ap}/name`, `agent group name '${agent.name}' is already used at ${prevAgent}${where(src, prevAgent)}`);
    } else {
      agentNames.set(agent.name, `${ap}/name`);
    }
    if ((agent.mode === 'agent' || agent.mode === 'infrastructure') && exposure === 'ClusterIP') {
      err(
        `${ap}/mode`,
        `mode '${agent.mode}' runs outside the plugin-server's cluster and cannot reach a ClusterIP Service; ` +
          'set pluginServer.grpc.exposure to LoadBalancer or External',
      );
    }
    if (agent.mode === 'agent' && agent.accounts.length !== 1) {
      err(
        `${ap}/accounts`,
        `mode 'agent' has exactly one account (the cluster it runs in); found ${agent.accounts.length}`,
      );
    }
    agent.accounts.forEach((acc, j) => {
      const p = `${ap}/accounts/${j}`;
      const prev = accountNames.get(acc.name);
      if (prev !== undefined) {
        err(`${p}/name`, `account name '${acc.name}' is already used at ${prev}${where(src, prev)}`);
      } else {
        accountNames.set(acc.name, `${p}/name`);
      }
      if (agent.mode === 'agent') {
        if (acc.serviceAccount !== true) {
          err(
            acc.serviceAccount === false ? `${p}/serviceAccount` : p,
            "mode 'agent' accounts need serviceAccount: true",
          );
        }
        if (acc.kubeconfigSecret) {
          err(`${p}/kubeconfigSecret`, "mode 'agent' accounts use the pod's ServiceAccount, not a kubeconfig");
        }
        if (acc.rbac?.serviceAccountNamespace !== undefined) {
          err(`${p}/rbac/serviceAccountNamespace`, "mode 'agent' accounts use the agent's own ServiceAccount");
        }
      } else {
        if (!acc.kubeconfigSecret) err(p, `mode '${agent.mode}' accounts need kubeconfigSecret`);
        if (acc.serviceAccount === true) {
          err(`${p}/serviceAccount`, `mode '${agent.mode}' accounts cannot use serviceAccount (only mode 'agent')`);
        }
      }
      if (acc.context !== undefined && agent.mode === 'agent') {
        err(`${p}/context`, "mode 'agent' accounts have no kubeconfig context");
      }
      if ((acc.namespaces?.length ?? 0) > 0 && (acc.omitNamespaces?.length ?? 0) > 0) {
        err(`${p}/omitNamespaces`, 'namespaces and omitNamespaces are exclusive');
      }
      if ((acc.kinds?.length ?? 0) > 0 && (acc.omitKinds?.length ?? 0) > 0) {
        err(`${p}/omitKinds`, 'kinds and omitKinds are exclusive');
      }
      for (const field of ['kinds', 'omitKinds'] as const) {
        (acc[field] ?? []).forEach((k, n) => {
          if (!resolveKind(k)) {
            err(
              `${p}/${field}/${n}`,
              `unknown kind '${k}'; write custom resources as Kind.group (e.g. Rollout.argoproj.io)`,
            );
          }
        });
      }
      if (acc.access === 'read-only' && (acc.permissions?.WRITE?.length ?? 0) > 0) {
        err(`${p}/permissions/WRITE`, 'a read-only account cannot grant WRITE permissions');
      }
    });
  });
  return out;
}

function where(src: LoadedYaml, path: string): string {
  const pos = src.locate(path);
  return pos ? ` (line ${pos.line})` : '';
}
