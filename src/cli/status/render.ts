import type { AccountStatus, FleetStatus } from './fleet.js';

function table(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)];
}

/** Whole seconds as a person reads them: 42s, 7m, 3h, 2d. */
function roughly(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}

function since(iso: string, now: number): string {
  const t = Date.parse(iso);
  return Number.isFinite(t) ? roughly((now - t) / 1000) : '';
}

/** A lag: milliseconds below a second, one decimal below a minute. */
function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  return roughly(ms / 1000);
}

/** `listing 2, 5 done, 1234 objects, 40s`: scopes being listed, scopes finished, objects received, time so far. */
function syncCell(sync: AccountStatus['sync'], now: number): string {
  if (!sync) return '-';
  const elapsed = roughly((now - sync.startedAt) / 1000);
  return `listing ${sync.scopesListing}, ${sync.scopesListed} done, ${sync.objects} objects, ${elapsed}`;
}

/** The fleet as text for a terminal: a header line, agents, accounts, pending operations, problems. */
export function renderFleet(f: FleetStatus, now = Date.now()): string {
  const out: string[] = [];
  const health =
    f.problems.length === 0 ? 'healthy' : `${f.problems.length} problem${f.problems.length > 1 ? 's' : ''}`;
  const syncing = f.accounts.filter((a) => a.sync).length;
  out.push(
    `${f.url}  ${f.ready ? 'ready' : 'NOT READY'}  ${f.agents.length} agents  ${f.accounts.length} accounts  ` +
      `${syncing ? `${syncing} syncing  ` : ''}${f.pendingOperations.length} pending operations  ${health}`,
  );
  out.push('');
  out.push(
    ...table(
      ['AGENT', 'REPLICA', 'VERSION', 'ZONE', 'CONNECTED', 'ACCOUNTS', 'STANDBY FOR'],
      f.agents.map((a) => [
        a.agentId,
        a.heldBy || '-',
        a.version,
        a.zone || '-',
        since(a.connectedAt, now),
        String(a.accounts.length),
        a.rejected
          .filter((r) => r.reason.startsWith('standby:'))
          .map((r) => r.name)
          .join(',') || '-',
      ]),
    ),
  );
  out.push('');
  out.push(
    ...table(
      ['ACCOUNT', 'STATE', 'AGENT', 'REPLICA', 'OBJECTS', 'LAG', 'SYNC', 'ERROR'],
      f.accounts.map((a) => [
        a.name,
        a.state,
        a.agentId || '-',
        a.heldBy || '-',
        String(a.objects),
        a.changeLagMs === null ? '-' : duration(a.changeLagMs),
        syncCell(a.sync, now),
        a.error || (a.forbiddenKinds.length ? `forbidden: ${a.forbiddenKinds.join(',')}` : ''),
      ]),
    ),
  );
  if (f.pendingOperations.length) {
    out.push('');
    out.push(
      ...table(
        ['OPERATION', 'TYPE', 'ACCOUNT', 'STATE', 'AGE'],
        f.pendingOperations.map((o) => [
          o.operationId,
          o.type,
          o.account,
          o.state,
          o.queuedAt ? since(new Date(o.queuedAt).toISOString(), now) : '',
        ]),
      ),
    );
  }
  if (f.problems.length) {
    out.push('');
    for (const p of f.problems) out.push(`! ${p}`);
  }
  return out.join('\n') + '\n';
}
