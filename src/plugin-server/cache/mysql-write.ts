/**
 * One cache write's statements, sent to MySQL in as few round trips as it allows. A write used to cost a round trip
 * per command (the isolation level and BEGIN, the upserts, the scope states, the fence, COMMIT): for the steady
 * trickle of watch events, one object per write, that was most of its time above a bare upsert. The statements now go
 * as multi-statement packets (the connection is opened with CLIENT_MULTI_STATEMENTS), so a write that fits one packet
 * and needs no fence is one round trip, COMMIT included.
 *
 * Why it stays atomic:
 * - the server stops a packet at its first failing statement, so a COMMIT behind a failed statement never runs, and
 *   the caller rolls back;
 * - the first packet, which opens the transaction, is awaited before any other is sent: were START TRANSACTION
 *   refused, a later packet would otherwise run its rows in autocommit;
 * - a write of several packets (more than MAX_BYTES_PER_STATEMENT of rows) never puts COMMIT in a packet: it commits
 *   in its own round trip once every packet has answered;
 * - a fenced write ends with the fence's SELECT and commits only after the caller checked its rows.
 *
 * Every value in these statements is a literal written by mysql-literal.ts or an integer: a statement never carries
 * text that did not go through the escaper, which is what makes multi-statement packets safe here.
 */
import type { PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { timed } from './mysql-timeout.js';
import { MAX_BYTES_PER_STATEMENT } from './sql-rows.js';

/** What a statement's result is read for: the rows a sweep or prune deleted, or the fence's lease rows. */
export type StatementTag = 'swept' | 'pruned' | 'fence';

export interface WriteResults {
  swept: number;
  pruned: number;
  fenceRows: RowDataPacket[];
}

interface Packet {
  statements: string[];
  tags: (StatementTag | undefined)[];
  bytes: number;
}

export class WriteStatements {
  private readonly packets: Packet[] = [];

  constructor(private readonly maxPacketBytes = MAX_BYTES_PER_STATEMENT) {}

  add(sql: string, tag?: StatementTag): void {
    let last = this.packets.at(-1);
    if (!last || (last.statements.length > 0 && last.bytes + sql.length > this.maxPacketBytes)) {
      last = { statements: [], tags: [], bytes: 0 };
      this.packets.push(last);
    }
    last.statements.push(sql);
    last.tags.push(tag);
    last.bytes += sql.length + 1;
  }

  /**
   * Opens the transaction (at READ COMMITTED when asked), runs every statement in order and, with `commit`, commits.
   * Without `commit` the transaction is left open for the caller to commit or roll back. Any failure rejects; the
   * caller rolls back.
   */
  async run(conn: PoolConnection, readCommitted: boolean, commit: boolean): Promise<WriteResults> {
    const opening = [...(readCommitted ? ['SET TRANSACTION ISOLATION LEVEL READ COMMITTED'] : []), 'START TRANSACTION'];
    const packets = this.packets.length > 0 ? this.packets : [{ statements: [], tags: [], bytes: 0 }];
    const commitInFirst = commit && packets.length === 1;
    const results: WriteResults = { swept: 0, pruned: 0, fenceRows: [] };
    const send = async (packet: Packet, before: string[], after: string[]): Promise<void> => {
      const sent = [...before, ...packet.statements, ...after];
      const [raw] = await conn.query(timed(sent.join(';')));
      // One statement answers with its result; several with an array of their results, in order.
      const answers = sent.length === 1 ? [raw] : (raw as unknown[]);
      packet.tags.forEach((tag, i) => {
        const r = answers[before.length + i];
        if (tag === 'swept') results.swept += (r as ResultSetHeader).affectedRows;
        else if (tag === 'pruned') results.pruned += (r as ResultSetHeader).affectedRows;
        else if (tag === 'fence') results.fenceRows = r as RowDataPacket[];
      });
    };
    await send(packets[0]!, opening, commitInFirst ? ['COMMIT'] : []);
    // The rest are queued on the connection together (it runs them in order): the server executes one while the
    // next is on its way.
    await Promise.all(packets.slice(1).map((p) => send(p, [], [])));
    if (commit && !commitInFirst) await conn.commit();
    return results;
  }
}
