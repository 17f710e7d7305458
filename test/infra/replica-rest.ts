/**
 * What the replicas tests read of a replica's admin API: an account as /armory/accounts/{name} shows it, an agent as
 * /armory/agents shows it (the plugin-server's own type), and the two reads they keep making.
 */
import type { AgentView as ServedAgentView, HeldBy } from '../../src/plugin-server/replica-views.js';
import type { PluginServerProcess } from './processes.js';

/** The fields of /armory/accounts/{name} the replicas tests look at. */
export interface AccountView {
  name: string;
  state: string;
  agentId: string;
  kubeHost: string;
  heldBy: HeldBy | null;
}

/** One entry of /armory/agents, with the replica that holds its stream. */
export type AgentView = ServedAgentView & { heldBy?: HeldBy | null };

/** `name` as replica `r` shows it. */
export const accountOn = async (r: PluginServerProcess, name: string): Promise<AccountView> =>
  (await r.get<AccountView>(`/armory/accounts/${name}`)).body;

/** `agentId`'s live stream (one with a session) as replica `r` lists it; undefined while it has none there. */
export const agentOn = async (r: PluginServerProcess, agentId: string): Promise<AgentView | undefined> =>
  (await r.get<AgentView[]>('/armory/agents')).body.find((x) => x.agentId === agentId && x.sessionId);
