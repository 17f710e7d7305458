/**
 * The fault rig's ledger (test/infra/faults/operations.ts) against the shared control plane: a long run takes its
 * settled appends' ids off the ledger, so the soak does not measure its own ledger growing.
 */
import { describe, expect, it } from 'vitest';
import { adminKubeConfig, createNamespace } from '../../infra/index.js';
import { installWidgetCrd, OperationsLoad, WIDGET_GROUP } from '../../infra/faults/index.js';
import { kubeRequest, objectPath } from '../../infra/faults/kube-raw.js';

describe('fault rig ledger', () => {
  it('trimLedger removes exactly the given ids (every copy) and keeps the rest in order', async () => {
    const kc = adminKubeConfig();
    await installWidgetCrd(kc);
    const ns = await createNamespace('faults-ledger');
    // No plugin-server is needed: trimLedger only talks to the API server.
    const ops = new OperationsLoad('http://127.0.0.1:9', 'unused', ns);
    await ops.prepare(kc);
    const path = objectPath(`${WIDGET_GROUP}/v1`, 'Widget', ns, 'ledger');
    for (const id of ['r-1', 'r-2', 'r-3', 'r-1', 'r-4']) {
      await kubeRequest(
        kc,
        'PATCH',
        path,
        [{ op: 'add', path: '/spec/applied/-', value: id }],
        'application/json-patch+json',
      );
    }
    expect(await ops.trimLedger(kc, [])).toBe(0);
    expect(await ops.trimLedger(kc, ['r-1', 'r-3', 'r-9'])).toBe(3);
    const ledger = await kubeRequest<{ spec: { applied: string[] } }>(kc, 'GET', path);
    expect(ledger.spec.applied).toEqual(['r-2', 'r-4']);
  });
});
