import type { Logger } from '../../shared/logging.js';
import type { UpstreamClient } from './client.js';

/**
 * The upstream Clouddriver's account names, read from its `/credentials` every `accountsRefreshSeconds`. They let
 * registration refuse an agent account that would shadow (or be shadowed by) a classic account of the same name:
 * with one name on both sides, neither reads nor operations could say which side is meant. The last good list is
 * kept while the upstream is down, so a restart of Clouddriver does not open the door to clashes.
 */
export class UpstreamAccounts {
  private names = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** When the list was last read successfully (0: never). */
  lastRefreshedAt = 0;

  constructor(
    private readonly client: UpstreamClient,
    private readonly options: {
      refreshMs: number;
      timeoutMs: number;
      log: Logger;
      /** Agent accounts registered here, to warn about a name the upstream gained after its agent registered it. */
      registered?: () => string[];
      /**
       * Names the automatic migration moves to agents (dynamicAccounts.scan): the agent side answers for them, as
       * Armory's agent accounts take precedence over Clouddriver's, so they are no clash.
       */
      movedToAgents?: (name: string) => boolean;
    },
  ) {}

  has(name: string): boolean {
    return this.names.has(name);
  }

  /** The reason an agent may not register `name`, or undefined when it may. */
  clash(name: string): string | undefined {
    if (!this.names.has(name) || this.options.movedToAgents?.(name)) return undefined;
    return `account ${name} already exists in the upstream Clouddriver (${this.client.baseUrl}); one name cannot be both a classic and an agent account, rename one of them`;
  }

  /** Reads the list once now (a failure is logged; the previous list stays), then every refreshMs. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs);
    this.timer.unref();
  }

  refresh(): Promise<void> {
    this.running ??= this.read().finally(() => (this.running = undefined));
    return this.running;
  }

  private async read(): Promise<void> {
    try {
      const res = await this.client.getJson('/credentials', {}, this.options.timeoutMs);
      if (res.status !== 200 || !Array.isArray(res.body)) {
        throw new Error(`GET /credentials answered ${res.status}`);
      }
      this.names = new Set(
        res.body
          .map((c: unknown) => (c && typeof c === 'object' ? (c as { name?: unknown }).name : undefined))
          .filter((n): n is string => typeof n === 'string'),
      );
      this.lastRefreshedAt = Date.now();
      const both = (this.options.registered?.() ?? []).filter(
        (n) => this.names.has(n) && !this.options.movedToAgents?.(n),
      );
      if (both.length > 0) {
        this.options.log.warn(
          { accounts: both, upstream: this.client.baseUrl },
          'agent accounts also exist in the upstream Clouddriver; requests for them are answered here, rename one side',
        );
      }
    } catch (e) {
      this.options.log.warn(
        { err: e, upstream: this.client.baseUrl, known: this.names.size },
        'cannot read the upstream Clouddriver accounts; keeping the last list',
      );
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
