// The README's five-minute walkthrough, step by step, over the typed client (@tollgate/client).
//   npx tsx examples/walkthrough.ts wallet   a wallet and its credential (printed as `export` lines for eval)
//   npx tsx examples/walkthrough.ts ping     the wallet pays the paid test endpoint /x402-test/ping
//   npx tsx examples/walkthrough.ts intent   a project, a merchant and a $1.23 payment intent the wallet pays
// Reads TOLLGATE (the api origin, default http://127.0.0.1:8402), TOLLGATE_MGMT, TOLLGATE_TOKEN, WALLET_SECRET.
import { createTollgateClient } from '@tollgate/client';

const baseUrl = process.env.TOLLGATE ?? 'http://127.0.0.1:8402';
const need = (name: string) => process.env[name] || fail(`${name} is not set (see the README's walkthrough)`);

function fail(message: string): never {
  console.error(`walkthrough: ${message}`);
  process.exit(1);
}

/** The answer's data, or the error envelope on stderr and exit 1. */
function ok<R extends { data: unknown }>(step: string, result: { data?: R; error?: unknown; response: Response }): R['data'] {
  if (!result.data) fail(`${step}: ${result.response.status} ${JSON.stringify(result.error)}`);
  return result.data.data;
}

/** A pay-and-call's answer; 202 means the wallet's spend policy waits for a human approval (docs/wallets.md). */
function paidCall<R extends { data: object }>(step: string, result: { data?: R; error?: unknown; response: Response }) {
  const answer = ok(step, result);
  if ('approval' in answer) fail(`${step}: waiting for a human approval of the payment (approval ${JSON.stringify(answer.approval)})`);
  return answer as Exclude<R['data'], { approval: unknown }>;
}

/**
 * A pay-and-call payment once the chain has decided it. Pay-and-call answers as soon as the seller says it settled: the
 * payment is `pending` then, the seller's transaction in `settlement`; the service confirms it on chain right after.
 */
async function confirmed(wallet: ReturnType<typeof createTollgateClient>, id: string) {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 200))) {
    const listed = ok('list payments', await wallet.GET('/v1/wallets/me/payments', { params: { query: { limit: 20 } } }));
    const payment = listed.find((p) => p.id === id);
    if (payment && payment.status !== 'pending' && payment.status !== 'unknown') return payment;
  }
  return fail(`payment ${id} was not confirmed on chain within 30 s`);
}

/** The devchain's network and token, for pay-and-call's `maxPayment`. */
async function chainAsset() {
  const { data } = await createTollgateClient({ baseUrl }).GET('/dev/chain');
  if (!data) fail('GET /dev/chain failed: is the instance on its embedded devchain?');
  return { network: data.network, asset: data.asset.address };
}

async function wallet() {
  const mgmt = createTollgateClient({ baseUrl, token: need('TOLLGATE_MGMT') });
  const created = ok('create wallet', await mgmt.POST('/v1/wallets', { body: { externalId: `walkthrough-${Date.now()}`, name: 'walkthrough' } }));
  console.log(`export WALLET_ADDRESS=${created.wallet.address}`);
  console.log(`export WALLET_SECRET=${created.credential!.secret}`);
}

async function ping() {
  const wallet = createTollgateClient({ baseUrl, token: need('WALLET_SECRET') });
  // Pay at most 100 atomic units (0.0001 USDG), the endpoint's price.
  const maxPayment = { ...(await chainAsset()), amount: '100' };
  const paid = paidCall('pay-and-call', await wallet.POST('/v1/wallets/me/pay-and-call', { body: { url: `${baseUrl}/x402-test/ping`, maxPayment } }));
  console.log(`upstream ${paid.upstream.status} ${JSON.stringify(paid.upstream.body)}`);
  if (!paid.payment) fail('pay-and-call: the endpoint asked for no payment');
  console.log(`answered with payment ${paid.payment.status}, the seller's transaction ${String(paid.payment.settlement?.transaction)}`);
  const payment = await confirmed(wallet, paid.payment.id);
  console.log(`payment ${payment.status} ${payment.amount} units, transaction ${payment.transaction}`);
}

async function intent() {
  const user = createTollgateClient({ baseUrl, token: need('TOLLGATE_TOKEN') });
  const { project, apiKey } = ok('create project', await user.POST('/v1/projects', { body: { name: 'walkthrough shop' } }));
  const merchant = ok(
    'create merchant',
    await user.POST('/v1/projects/{projectId}/merchants', {
      params: { path: { projectId: project.id } },
      // Where the shop is paid: here the wallet's own address would do; any address works.
      body: { name: 'walkthrough store', payTo: '0x000000000000000000000000000000000000dEaD' },
    }),
  );
  const shop = createTollgateClient({ baseUrl, token: apiKey.secret });
  const { data: created, error, response } = await shop.POST('/v1/payment-intents', {
    body: { merchantId: merchant.id, amountUsdCents: 123, externalId: `order-${Date.now()}`, description: 'walkthrough order' },
  });
  if (!created) fail(`create intent: ${response.status} ${JSON.stringify(error)}`);
  console.log(`intent ${created.id} ${created.status}, pay at ${created.paymentUrl}`);

  // The wallet pays the intent's x402 pay URL: $1.23 is 1,230,000 units of the 6-decimal token.
  const wallet = createTollgateClient({ baseUrl, token: need('WALLET_SECRET') });
  const maxPayment = { ...(await chainAsset()), amount: String(created.amountUsdCents * 10_000) };
  const paid = paidCall('pay intent', await wallet.POST('/v1/wallets/me/pay-and-call', { body: { url: created.paymentUrl, method: 'POST', maxPayment } }));
  if (!paid.payment) fail('pay intent: the intent asked for no payment');
  const payment = await confirmed(wallet, paid.payment.id);
  console.log(`payment ${payment.status}, transaction ${payment.transaction}`);
  const { data: after } = await shop.GET('/v1/payment-intents/{intentId}', { params: { path: { intentId: created.id } } });
  console.log(`intent ${after?.id} ${after?.status}`);
}

const steps: Record<string, () => Promise<void>> = { wallet, ping, intent };
const step = steps[process.argv[2] ?? ''];
if (!step) fail(`usage: npx tsx examples/walkthrough.ts ${Object.keys(steps).join('|')}`);
await step();
