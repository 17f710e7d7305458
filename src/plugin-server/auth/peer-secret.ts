import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ScaleAgentError } from '../../shared/errors.js';
import { MIN_PEER_SECRET_LENGTH, isPeerSecret } from '../../shared/secret-formats.js';

/**
 * Who a peer replica forwards a request for (the principal the forwarding replica authenticated), for the audit
 * log of the replica that runs it. Believed only from a caller that presented the peer secret.
 */
export const ON_BEHALF_OF_HEADER = 'x-scale-agent-on-behalf-of';

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * The secret every replica sharing a store holds: replicas present it to each other as a bearer token on
 * /internal/*, and nobody else can, whatever network they call from. Either a file (http.peerAuth.secretFile, a
 * Secret mounted into each replica), re-read when it changes so a rotated Secret applies without a restart — while
 * a rotation rolls out the previous secret is still accepted, so old and new replicas keep forwarding to each other
 * — or, without one, derived from the MySQL URL the replicas share (fromStore).
 */
export class PeerSecret {
  private current!: Buffer;
  private previous: Buffer | undefined;
  private text!: string;
  private stamp = '';

  private constructor(
    readonly file: string | undefined,
    derived?: string,
  ) {
    if (derived === undefined) this.reload();
    else this.adopt(derived, 'derived');
  }

  static fromFile(file: string): PeerSecret {
    return new PeerSecret(file);
  }

  /**
   * Without http.peerAuth: a secret only holders of the store's URL (its password) can compute — every replica, and
   * nobody who could not rewrite the store anyway — so replicas of an install that names no secret still forward
   * to each other, and a caller on their network still cannot. Changes when the URL does.
   */
  static fromStore(mysqlUrl: string): PeerSecret {
    return new PeerSecret(undefined, createHmac('sha256', mysqlUrl).update('scale-agent peer secret v1').digest('hex'));
  }

  /** The Authorization header value this replica sends to its peers. */
  authorization(): string {
    this.refresh();
    return `Bearer ${this.text}`;
  }

  /** Whether `token` is the peer secret (compared as digests, so timing says nothing about a prefix). */
  verifies(token: string | undefined): boolean {
    if (token === undefined) return false;
    this.refresh();
    const d = digest(token);
    return timingSafeEqual(d, this.current) || (this.previous !== undefined && timingSafeEqual(d, this.previous));
  }

  private refresh(): void {
    if (this.file === undefined) return;
    try {
      const st = statSync(this.file);
      if (`${st.mtimeMs}:${st.size}` !== this.stamp) this.reload();
    } catch {
      // A Secret being swapped (symlink flip) can vanish for a moment: keep the last good secret.
    }
  }

  private reload(): void {
    if (this.file === undefined) return;
    let text: string;
    let stamp: string;
    try {
      const st = statSync(this.file);
      stamp = `${st.mtimeMs}:${st.size}`;
      text = readFileSync(this.file, 'utf8').trim();
    } catch (e) {
      throw new ScaleAgentError('FILE_UNREADABLE', `cannot read http.peerAuth.secretFile ${this.file}`, { cause: e });
    }
    if (!isPeerSecret(text)) {
      const why = `http.peerAuth.secretFile ${this.file}: the peer secret must be one word of at least ${MIN_PEER_SECRET_LENGTH} characters`;
      if (this.stamp === '') throw new ScaleAgentError('INVALID_INPUT', why);
      // A bad rotation must not lock the replicas out of each other: keep the secret they share.
      this.stamp = stamp;
      return;
    }
    this.adopt(text, stamp);
  }

  private adopt(text: string, stamp: string): void {
    if (this.stamp !== '' && text !== this.text) this.previous = this.current;
    this.current = digest(text);
    this.text = text;
    this.stamp = stamp;
  }
}
