// The quick check batches payments into one Multicall3 call, which runs its calls in order inside
// one EVM call: copies of one payment in a batch must not read each other's simulated transfer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuickChecker } from '../../src/x402/facilitator/quick-check.js';
import type { Eip3009Payload } from '../../src/x402/payload.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, signAuthorization } from '../x402/support.js';
import { requirementsFor } from './support.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

describe('quick check batches', () => {
  it('copies of one unused payment in one batch all read valid, never used', async () => {
    const checker = new QuickChecker(app.ctx.chain.publicClient, async () => true);
    const requirements = requirementsFor(app, '100');
    const [payer, other] = await Promise.all([fundedPayer(app, '1'), fundedPayer(app, '1')]);
    const payload = await signAuthorization(payer, requirements);
    const otherPayload = await signAuthorization(other, requirements);
    const check = (p: typeof payload) => checker.check(p, requirements, p.payload as unknown as Eip3009Payload);

    const results = await Promise.all([check(payload), check(otherPayload), check(payload), check(payload)]);
    expect(results).toEqual(['valid', 'valid', 'valid', 'valid']);
  });
});
