// A payer out to drain the public facilitator's gas: every settle costs our relayer a transaction, so
// dust payments, payments to oneself, and many self-registered merchants must not buy settles.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { requirementsFor } from '../facilitator/support.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createShop } from '../intents/fixtures.js';
import { fundedPayer, relayerTxCount, signAuthorization } from '../x402/support.js';
import { checkLedger, reportTally } from './support.js';

// Frozen at the real time (the devchain's), so the limit window never rolls over mid-test.
const clock = new ManualClock();
let app: TestApp;

beforeAll(async () => {
  app = await buildTestApp({ clock, env: { FACILITATOR_PAY_TO_POLICY: 'registered', FACILITATOR_SETTLE_LIMIT_PER_OWNER: '2' } });
});
afterAll(async () => {
  reportTally('gas-drain');
  await app?.close();
});

const settle = (paymentPayload: unknown, paymentRequirements: unknown) =>
  app.origins.facilitator!.inject({ method: 'POST', url: '/settle', payload: { x402Version: 2, paymentPayload, paymentRequirements } as object });

describe('the public facilitator does not pay gas for what buys nothing', () => {
  it('a 1-unit payment to a registered merchant is refused below the minimum settle amount; nothing is sent', async () => {
    const shop = await createShop(app);
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app, '1', shop.payTo);
    const sent = await relayerTxCount(app, app.ctx.chain.relayer!.address);

    const answer = await settle(await signAuthorization(payer, requirements), requirements);

    checkLedger(answer.json().success ? 1 : 0, 0);
    expect(answer.json()).toMatchObject({ success: false, errorReason: 'invalid_payment_requirements', errorMessage: expect.stringContaining('minimum') });
    expect(await relayerTxCount(app, app.ctx.chain.relayer!.address)).toBe(sent);
  });

  it('a payer paying its own registered merchant address is refused; nothing is sent', async () => {
    const payer = await fundedPayer(app, '1');
    const identity = await app.identityToken('self-payer');
    const project = (await app.origins.api!.inject({ method: 'POST', url: '/v1/projects', headers: { authorization: `Bearer ${identity}` }, payload: { name: 'me' } })).json().data.project;
    const merchant = await app.origins.api!.inject({
      method: 'POST',
      url: `/v1/projects/${project.id}/merchants`,
      headers: { authorization: `Bearer ${identity}` },
      payload: { name: 'me', payTo: payer.address },
    });
    expect(merchant.statusCode).toBe(201);
    const requirements = requirementsFor(app, '100', payer.address);
    const sent = await relayerTxCount(app, app.ctx.chain.relayer!.address);

    const answer = await settle(await signAuthorization(payer, requirements), requirements);

    checkLedger(answer.json().success ? 1 : 0, 0);
    expect(answer.json()).toMatchObject({ success: false, errorReason: 'invalid_payment_requirements', errorMessage: expect.stringContaining('payer is the payee') });
    expect(await relayerTxCount(app, app.ctx.chain.relayer!.address)).toBe(sent);
  });

  it('one owner with three merchants gets the owner budget, not three payTo budgets: the third settle is 429', async () => {
    const owner = `owner-${Date.now()}`;
    const shops = [await createShop(app, owner), await createShop(app, owner), await createShop(app, owner)];
    const payer = await fundedPayer(app, '1');
    const answers = [];
    for (const shop of shops) {
      const requirements = requirementsFor(app, '100', shop.payTo);
      answers.push(await settle(await signAuthorization(payer, requirements), requirements));
    }
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 429]);
    expect(answers[2]!.json()).toMatchObject({ error: { code: 'rate_limited', message: expect.stringContaining('owner') } });
    // Another owner's merchant has its own budget.
    const other = await createShop(app);
    const requirements = requirementsFor(app, '100', other.payTo);
    expect((await settle(await signAuthorization(payer, requirements), requirements)).json()).toMatchObject({ success: true });
  });

  it("a griefer who registers a merchant at someone else's payTo and spends its own budget does not block that payTo", async () => {
    const victim = await createShop(app);
    const griefer = `griefer-${Date.now()}`;
    const own = [await createShop(app, griefer), await createShop(app, griefer)];
    const identity = await app.identityToken(griefer);
    const merchant = await app.origins.api!.inject({
      method: 'POST',
      url: `/v1/projects/${own[0]!.projectId}/merchants`,
      headers: { authorization: `Bearer ${identity}` },
      payload: { name: 'not mine', payTo: victim.payTo },
    });
    expect(merchant.statusCode).toBe(201);
    const payer = await fundedPayer(app, '1');
    const pay = async (payTo: `0x${string}`) => {
      const requirements = requirementsFor(app, '100', payTo);
      return settle(await signAuthorization(payer, requirements), requirements);
    };
    for (const shop of own) expect((await pay(shop.payTo)).statusCode).toBe(200);
    expect((await pay(own[0]!.payTo)).statusCode).toBe(429);

    expect((await pay(victim.payTo)).json()).toMatchObject({ success: true });
  });
});
