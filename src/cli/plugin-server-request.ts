import { ScaleAgentError } from '../shared/errors.js';

/**
 * One call of a CLI command to a plugin-server's REST API, with the errors every such command reports alike: an
 * unreachable server (UNAVAILABLE, exit 3) and a refused token (UNAUTHENTICATED, naming the scope it needs). The
 * status and text of any other answer are the caller's to judge.
 */
export async function pluginServerRequest(
  base: string,
  path: string,
  opts: {
    method?: 'GET' | 'POST';
    body?: unknown;
    token?: string | undefined;
    timeoutMs: number;
    scope: 'read' | 'admin';
  },
): Promise<{ status: number; ok: boolean; text: string }> {
  const method = opts.method ?? 'GET';
  let res: Response;
  try {
    res = await fetch(base + path, {
      method,
      headers: {
        ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      },
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
  } catch (e) {
    throw new ScaleAgentError('UNAVAILABLE', `cannot reach the plugin-server at ${base}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const text = await res.text();
  if (res.status === 401 || res.status === 403) {
    throw new ScaleAgentError(
      'UNAUTHENTICATED',
      `${method} ${path.split('?')[0]}: ${res.status}; pass ${opts.scope === 'admin' ? 'an admin' : 'a read'} token with --token or SCALE_AGENT_TOKEN`,
    );
  }
  return { status: res.status, ok: res.ok, text };
}
