import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { AccountsChanged, AccountStatus } from '../shared/proto.js';
import type { Identity } from './auth/identity.js';

/** What the gate sees of a session. */
export interface GatedSession {
  readonly id: string;
  readonly agentId: string;
  readonly zone: string;
  readonly identity: Identity;
  /** Whether the stream is still open. */
  readonly open: boolean;
  sendAccountsChanged(message: AccountsChanged): void;
}

/** Why the gate refuses: the identity may not register the name, or the dynamic account's definition says no. */
export type GateVerdict = { ok: true } | { ok: false; code: 'unauthorized' | 'dynamic'; reason: string };

/**
 * The session's window onto authorization and dynamic accounts (auth/, accounts/dynamic.ts): who the peer is,
 * whether it may register a name, and the hooks the dynamic account manager needs to place accounts on agents.
 */
export interface SessionGate {
  identify(call: ServerDuplexStream<unknown, unknown>): Identity;
  /** Before `check` is asked about these offered names: a name known nowhere here is read from the store. */
  prepare?(accountNames: readonly string[]): Promise<void>;
  check(session: GatedSession, accountName: string): GateVerdict;
  rejected(session: GatedSession, accountName: string, reason: string): void;
  welcomed(session: GatedSession): void;
  status(session: GatedSession, status: AccountStatus): void;
  closed(session: GatedSession): void;
}
