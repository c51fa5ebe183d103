// A third party who executes the payer's authorization itself after the merchant's settle went unknown:
// the intent is paid (by that transaction, once), and an operator can see and resolve intents left settling.
import { decodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import type { Address } from 'viem';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { ManualClock } from '../../src/platform/clock.js';
import { signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { Faults } from '../intents/faults.js';
import { createIntent, createShop } from '../intents/fixtures.js';
import { buildPayApp, challengeOf, fundedPayer, getIntent, pay, transfersTo } from '../intents/harness.js';
import { executeElsewhere } from '../x402/support.js';
import { checkLedger, reportTally } from './support.js';

const faults = new Faults();
// Moved by hand past the stuck listing's 10 minutes; the worker's own reconciliation is kept out of the way.
const clock = new ManualClock();
let app: TestApp;

beforeAll(async () => {
  app = await buildPayApp({ ...faults.options(), clock, env: { INTENT_RECONCILE_INTERVAL_MS: '3600000' } });
});
afterAll(async () => {
  reportTally('front-run');
  await app?.close();
});

it('an authorization executed by a third party after an unknown settle: listed as stuck, resolved from the chain to that transaction, once', async () => {
  const shop = await createShop(app);
  const payer = await fundedPayer(app, '20');
  const intent = (await createIntent(app, shop, { amountUsdCents: 225 })).json();
  const { header } = await signPayment(payer, await challengeOf(app, intent.id));
  faults.onNextSettle(async () => ({ kind: 'unknown', transaction: null, message: 'lost (injected)' }));
  expect((await pay(app, intent.id, { 'payment-signature': header })).statusCode).toBe(503);
  // Someone else sends the signed authorization to the token: none of our signers did.
  const frontRun = (await executeElsewhere(app, decodePaymentSignatureHeader(header) as PaymentPayload)).transactionHash;

  const commands = adminCommands(app.ctx, app.modules);
  clock.advance(11 * 60_000);
  const stuck = (await commands['intents.stuck']!({})) as { intents: { id: string }[] };
  const resolved = await commands['intents.resolve']!({ id: intent.id });

  const transfers = await transfersTo(app, shop.payTo as Address);
  checkLedger(resolved && (resolved as { status: string }).status === 'settled' ? 1 : 0, transfers.length);
  expect(stuck.intents.map((i) => i.id)).toContain(intent.id);
  expect(resolved).toMatchObject({ id: intent.id, status: 'settled', transactionHash: frontRun });
  expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settled', transactionHash: frontRun });
  expect(transfers.map((t) => t.transactionHash)).toEqual([frontRun]);
  // Paying again with the same signature is not a second payment.
  expect((await pay(app, intent.id, { 'payment-signature': header })).json()).toMatchObject({ status: 'settled' });
});
