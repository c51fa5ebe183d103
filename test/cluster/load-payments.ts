// The paying kinds of the load, each a fixed number of operations with a few in flight, each retried the
// way a real client would after a lost answer or a "try again" status, never past its deadline:
// - pay-and-calls of /x402-test/ping (a new purchase per retry: pay-and-call has no idempotency key);
// - payment intents created (idempotent on externalId) and paid through pay-and-call, the intent's status
//   read back after anything but a clear answer;
// - public /settle of hand-signed authorizations at a random facilitator, retried with the same payload and
//   payment-identifier;
// - paid storage uploads, retried with the same Idempotency-Key and the same signed payment.
import { randomBytes, randomUUID } from 'node:crypto';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import sharp from 'sharp';
import { USDG_ADDRESS } from '../../src/chain/devchain.js';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import { signAuthorization } from '../x402/support.js';
import { counts, countOp, giveUp, inFlight, request, sleep, type Answer } from './client.js';
import type { Fixtures, Wallet } from './fixtures.js';
import type { Cluster } from './topology.js';

export const NETWORK = 'eip155:4663';
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const describe = (answer: Answer) => `${answer.status ?? 'lost'} ${JSON.stringify(answer.body)?.slice(0, 200)}`;

/** What the clients were told: the invariants compare it with the database and the chain. */
export interface Told {
  /** pay-and-call ids of ping purchases answered 200 with the upstream's 200. */
  pingPayments: string[];
  /** Intent id → its amount; `answeredSettled` when a pay answer said settled. */
  intents: Map<string, { amountUsdCents: number; answeredSettled: boolean }>;
  /** Public settles: authorization (payer:nonce) → how many `success: true` answers it got. */
  settleSuccesses: Map<string, number>;
  /** Upload order ids answered fulfilled. */
  fulfilledOrders: string[];
}

export const newTold = (): Told => ({ pingPayments: [], intents: new Map(), settleSuccesses: new Map(), fulfilledOrders: [] });

export interface LoadContext {
  cluster: Cluster;
  fx: Fixtures;
  told: Told;
  /** Over how long the operations of each kind are spread. */
  spanMs: number;
  /** No new attempt starts after this instant. */
  deadline: number;
}

const payAndCall = (fx: Fixtures, wallet: Wallet, body: Record<string, unknown>) =>
  request(`${fx.lb}/v1/wallets/me/pay-and-call`, { headers: { authorization: `Bearer ${wallet.secret}` }, json: body });

export async function pingPurchases(ctx: LoadContext, n: number): Promise<void> {
  const { fx, told } = ctx;
  await inFlight(2, range(n), ctx.spanMs, async (i) => {
    countOp('payAndCall');
    const wallet = fx.pingWallets[i % fx.pingWallets.length]!;
    let last = 'no attempt';
    while (Date.now() < ctx.deadline) {
      const answer = await payAndCall(fx, wallet, { url: `${fx.lb}/x402-test/ping`, maxPayment: { network: NETWORK, asset: USDG_ADDRESS, amount: '100' } });
      if (answer.status === 200 && answer.body.data?.upstream?.status === 200) {
        if (answer.body.data.payment) told.pingPayments.push(answer.body.data.payment.id);
        return;
      }
      last = describe(answer);
      counts.retries += 1;
      await sleep(500);
    }
    giveUp('ping pay-and-call', last);
  });
}

export async function intentPurchases(ctx: LoadContext, n: number): Promise<void> {
  const { fx, told } = ctx;
  const pk = { authorization: `Bearer ${fx.apiKey}` };
  const read = async (id: string) => (await request(`${fx.lb}/v1/payment-intents/${id}`, { headers: pk })).body?.status as string | undefined;
  await inFlight(2, range(n), ctx.spanMs, async (i) => {
    countOp('intentPay');
    // A distinct amount per intent: a second transfer for one intent would show on chain as a second payment of its amount.
    const amountUsdCents = 100 + i;
    let id: string | null = null;
    let last = 'no attempt';
    while (!id && Date.now() < ctx.deadline) {
      const created = await request(`${fx.lb}/v1/payment-intents`, { headers: pk, json: { merchantId: fx.merchantId, amountUsdCents, externalId: `cluster-order-${i}` } });
      if (created.status === 200 || created.status === 201) id = created.body.id;
      else {
        last = describe(created);
        await sleep(500);
      }
    }
    if (!id) return giveUp('intent create', last);
    const record = { amountUsdCents, answeredSettled: false };
    told.intents.set(id, record);
    const wallet = fx.intentWallets[i % fx.intentWallets.length]!;
    while (Date.now() < ctx.deadline) {
      const answer = await payAndCall(fx, wallet, {
        url: `${fx.lb}/v1/payment-intents/${id}/pay`,
        method: 'POST',
        maxPayment: { network: NETWORK, asset: USDG_ADDRESS, amount: String(amountUsdCents * 10_000) },
      });
      if (answer.status === 200 && answer.body.data?.upstream?.status === 200 && answer.body.data.upstream.body?.status === 'settled') {
        record.answeredSettled = true;
        return;
      }
      last = describe(answer);
      // Anything else: ask the intent. settling → wait for its outcome; pending → pay again; settled → done.
      let status = await read(id);
      while (status === 'settling' && Date.now() < ctx.deadline + 30_000) {
        await sleep(1_000);
        status = await read(id);
      }
      if (status === 'settled') return;
      if (status === 'failed' || status === 'expired') return giveUp('intent pay', `intent ${status} after ${last}`);
      counts.retries += 1;
      await sleep(500);
    }
    giveUp('intent pay', last);
  });
}

export async function publicSettles(ctx: LoadContext, n: number): Promise<void> {
  const { cluster, fx, told } = ctx;
  const requirements: PaymentRequirements = {
    scheme: 'exact',
    network: NETWORK,
    asset: USDG_ADDRESS,
    amount: '1000',
    payTo: cluster.receivers.seller,
    maxTimeoutSeconds: 60,
    extra: { name: 'Global Dollar', version: '1' },
  };
  await inFlight(2, range(n), ctx.spanMs, async (i) => {
    countOp('publicSettle');
    const payer = fx.publicPayers[i % fx.publicPayers.length]!;
    const signed = await signAuthorization(payer, requirements, { validBefore: BigInt(Math.floor(Date.now() / 1000) + 30) });
    // The seller's own payment-identifier: its retry after a lost answer is told the success nobody had yet.
    const payload = { ...signed, extensions: { 'payment-identifier': { info: { required: false, id: `cluster_${randomBytes(12).toString('hex')}` } } } };
    const key = `${payer.address}:${(signed.payload as { authorization: { nonce: string } }).authorization.nonce}`;
    let last = 'no attempt';
    while (Date.now() < ctx.deadline) {
      const facilitators = cluster.up('facilitator');
      if (facilitators.length === 0) {
        await sleep(300);
        continue;
      }
      const facilitator = facilitators[Math.floor(Math.random() * facilitators.length)]!;
      const answer = await request(`${facilitator.origin}/settle`, { json: { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements } });
      if (answer.body?.success === true) {
        told.settleSuccesses.set(key, (told.settleSuccesses.get(key) ?? 0) + 1);
        return;
      }
      const reason = answer.body?.errorReason as string | undefined;
      last = describe(answer);
      // Told "already used" with our own id: the success went to a settle whose answer we lost.
      if (reason === 'invalid_exact_evm_nonce_already_used') return;
      if (answer.status !== null && answer.status < 500 && answer.status !== 429 && reason !== 'settlement_pending') {
        // A refusal (e.g. the authorization expired while every facilitator was down): nothing moved.
        return giveUp('public settle', last);
      }
      counts.retries += 1;
      await sleep(reason === 'settlement_pending' ? 1_000 : 300);
    }
    giveUp('public settle', last);
  });
}

export async function uploads(ctx: LoadContext, n: number): Promise<void> {
  const { fx, told } = ctx;
  await inFlight(1, range(n), ctx.spanMs, async (i) => {
    countOp('upload');
    const payer = fx.uploadPayers[i % fx.uploadPayers.length]!;
    const image = await sharp({ create: { width: 8, height: 8, channels: 3, background: { r: i * 20, g: 40, b: 200 - i } } })
      .png()
      .toBuffer();
    const key = randomUUID();
    const send = (headers: Record<string, string>, orderId?: string) => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(image)], { type: 'image/png' }), 'image.png');
      return request(`${fx.lb}/v1/ipfs/upload${orderId ? `?orderId=${orderId}` : ''}`, { headers: { 'idempotency-key': key, ...headers }, body: form });
    };
    let paymentHeader: string | null = null;
    let orderId: string | undefined;
    let last = 'no attempt';
    while (Date.now() < ctx.deadline) {
      const answer = await send(paymentHeader ? { 'payment-signature': paymentHeader } : {}, orderId);
      if (answer.status === 200 && answer.body.data?.status === 'fulfilled') {
        told.fulfilledOrders.push(answer.body.data.id);
        return;
      }
      if (answer.status === 402) {
        // A challenge: the first one, or the payment was refused (e.g. it expired while its settle was lost): sign anew.
        const challenge = readPaymentRequired((name) => answer.headers!.get(name), answer.body) as PaymentRequired;
        orderId = new URL(challenge.resource.url).searchParams.get('orderId') ?? undefined;
        paymentHeader = (await signPayment(payer, challenge, { validity: { chainTime: chainTimeOf(ctx.cluster), maxSeconds: 30 } })).header;
        continue;
      }
      // payment_pending (wait for its outcome), a lost answer, storage or facilitator trouble: the same request again.
      last = describe(answer);
      counts.retries += 1;
      await sleep(answer.status === 409 ? 1_000 : 300);
    }
    giveUp('upload', last);
  });
}

const chainTimeOf = (cluster: Cluster) => async () => (await cluster.pub.getBlock({ blockTag: 'latest' })).timestamp;
