// The invariants of issue 31, checked after the load from PostgreSQL and from the chain, never from what
// the service answered: one check per bullet, each counting its violations and naming them.
import { sql } from 'drizzle-orm';
import { getAddress, parseAbiItem, verifyTypedData, type Address, type Hex } from 'viem';
import { callAdminSocket } from '../../src/admin/socket.js';
import { USDG_ADDRESS } from '../../src/chain/devchain.js';
import type { Fixtures } from './fixtures.js';
import type { EventsTold } from './load-events.js';
import type { Told } from './load-payments.js';
import type { Cluster } from './topology.js';

export interface Check {
  name: string;
  /** How many things the check looked at. */
  checked: number;
  violations: string[];
}

const usedEvent = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');
const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const ZERO = '0x0000000000000000000000000000000000000000';
const MINUTE = 60_000;

/** One payment on chain: an AuthorizationUsed and the Transfer paired with it (the token's next log). */
export interface ChainPayment {
  tx: string;
  /** The Transfer log's index in its block. */
  logIndex: number;
  blockNumber: bigint;
  payer: Address;
  nonce: string;
  to: Address;
  value: bigint;
}

const authKey = (payer: string, nonce: string) => `${getAddress(payer)}:${nonce.toLowerCase()}`;

export async function chainPayments(cluster: Cluster): Promise<{ payments: ChainPayment[]; unpaired: string[] }> {
  const range = { address: USDG_ADDRESS, fromBlock: cluster.firstBlock, toBlock: 'latest' as const };
  const [used, transfers] = await Promise.all([cluster.pub.getLogs({ ...range, event: usedEvent }), cluster.pub.getLogs({ ...range, event: transferEvent })]);
  const transferAt = new Map(transfers.map((t) => [`${t.transactionHash}:${t.logIndex}`, t]));
  const payments: ChainPayment[] = [];
  const paired = new Set<string>();
  for (const u of used) {
    const t = transferAt.get(`${u.transactionHash}:${u.logIndex + 1}`);
    if (!t || getAddress(t.args.from!) !== getAddress(u.args.authorizer!)) continue;
    paired.add(`${t.transactionHash}:${t.logIndex}`);
    payments.push({ tx: t.transactionHash.toLowerCase(), logIndex: t.logIndex, blockNumber: t.blockNumber, payer: getAddress(u.args.authorizer!), nonce: u.args.nonce!.toLowerCase(), to: getAddress(t.args.to!), value: t.args.value! });
  }
  // Every token movement here is an EIP-3009 payment (mints aside): anything else moved money no service knows of.
  const unpaired = transfers.filter((t) => t.args.from !== ZERO && !paired.has(`${t.transactionHash}:${t.logIndex}`)).map((t) => t.transactionHash);
  return { payments, unpaired };
}

/** Every transfer backs at most one service (and every service one transfer paying its terms). */
export async function transfersBackOneService(cluster: Cluster, fx: Fixtures, told: Told, chain: { payments: ChainPayment[]; unpaired: string[] }): Promise<Check> {
  const db = cluster.testDb.database;
  const violations: string[] = chain.unpaired.map((tx) => `transfer without an authorization in ${tx}`);
  const byAuthorization = new Map(chain.payments.map((p) => [authKey(p.payer, p.nonce), p]));
  const byTx = new Map<string, ChainPayment[]>();
  for (const p of chain.payments) byTx.set(p.tx, [...(byTx.get(p.tx) ?? []), p]);
  const grants = new Map<ChainPayment, string[]>();
  const grant = (what: string, payment: ChainPayment | undefined, payTo: string, amount: string) => {
    if (!payment) return void violations.push(`${what}: no transfer on chain backs it`);
    if (getAddress(payTo) !== payment.to || BigInt(amount) !== payment.value) violations.push(`${what}: its transfer pays ${payment.value} to ${payment.to}, not ${amount} to ${payTo}`);
    grants.set(payment, [...(grants.get(payment) ?? []), what]);
  };
  const intents = await db.query<{ id: string; tx: string; pay_to: string; amount: string }>(
    sql`select id, transaction_hash as tx, pay_to, amount::text from payment_intents where status = 'settled'`,
  );
  for (const i of intents) grant(`intent ${i.id}`, (byTx.get(i.tx.toLowerCase()) ?? []).find((p) => p.to === getAddress(i.pay_to)), i.pay_to, i.amount);
  const orders = await db.query<{ id: string; payer: string; nonce: string; tx: string; pay_to: string; amount: string }>(
    sql`select id, payer, authorization_nonce as nonce, transaction_hash as tx, pay_to, amount::text from upload_orders where status in ('paid', 'fulfilled', 'expired')`,
  );
  for (const o of orders) {
    const payment = byAuthorization.get(authKey(o.payer, o.nonce));
    if (payment && payment.tx !== o.tx.toLowerCase()) violations.push(`upload order ${o.id} names ${o.tx}, its authorization was used in ${payment.tx}`);
    grant(`upload order ${o.id}`, payment, o.pay_to, o.amount);
  }
  const paid = await db.query<{ payer: string; nonce: string; resource: string }>(sql`select payer, nonce, resource from x402_paid_requests where status = 'settled'`);
  for (const r of paid) grant(`paid request ${r.resource} by ${r.payer}`, byAuthorization.get(authKey(r.payer, r.nonce)), cluster.receivers.ping, '100');
  const publicPayers = fx.publicPayers.map((p) => p.address);
  const settles = await db.query<{ payer: string; nonce: string; tx: string | null; pay_to: string; amount: string }>(
    sql`select payer, nonce, tx_hash as tx, pay_to, amount::text from x402_settlements where success_answered_at is not null and payer in (${sql.join(publicPayers.map((p) => sql`${p}`), sql`, `)})`,
  );
  for (const s of settles) grant(`public settle ${s.payer}:${s.nonce}`, byAuthorization.get(authKey(s.payer, s.nonce)), s.pay_to, s.amount);
  // Every service the clients were given was paid: each ping served (its pay-and-call payment settled by
  // a transfer on chain), each upload answered fulfilled.
  const walletPayments = await db.query<{ id: string; status: string; tx: string | null }>(sql`select id, status, transaction as tx from wallet_payments`);
  const paymentById = new Map(walletPayments.map((p) => [p.id, p]));
  for (const id of told.pingPayments) {
    const payment = paymentById.get(id);
    if (payment?.status !== 'settled' || !byTx.has(payment.tx!.toLowerCase())) violations.push(`ping served for payment ${id}, which is ${payment?.status ?? 'missing'} (${payment?.tx})`);
  }
  const fulfilled = new Set((await db.query<{ id: string }>(sql`select id from upload_orders where status = 'fulfilled'`)).map((o) => o.id));
  for (const id of told.fulfilledOrders) if (!fulfilled.has(id)) violations.push(`upload order ${id} answered fulfilled, not fulfilled in the database`);
  // And what the sellers were told: one `success: true` per authorization, ever.
  for (const [key, n] of told.settleSuccesses) if (n > 1) violations.push(`public settle ${key} answered success ${n} times`);
  for (const [payment, what] of grants) if (what.length > 1) violations.push(`transfer ${payment.tx}:${payment.logIndex} backs ${what.length} services: ${what.join(', ')}`);
  return { name: 'every transfer backs at most one service', checked: chain.payments.length + grants.size, violations };
}

/** Every paid intent settled exactly once; none still settling; every answered settlement is settled. */
export async function intentsSettledOnce(cluster: Cluster, fx: Fixtures, told: Told, chain: { payments: ChainPayment[] }): Promise<Check> {
  const violations: string[] = [];
  const rows = await cluster.testDb.database.query<{ id: string; status: string; tx: string | null; amount: string }>(
    sql`select id, status, transaction_hash as tx, amount::text from payment_intents where merchant_id = ${fx.merchantId}`,
  );
  const toMerchant = chain.payments.filter((p) => p.to === getAddress(fx.merchantPayTo));
  for (const intent of rows) {
    // Each intent has its own amount: every transfer of that amount to the merchant paid this intent.
    const paying = toMerchant.filter((p) => p.value === BigInt(intent.amount));
    if (intent.status === 'settling') violations.push(`intent ${intent.id} still settling`);
    if (paying.length > 1) violations.push(`intent ${intent.id} paid ${paying.length} times: ${paying.map((p) => p.tx).join(', ')}`);
    if (paying.length === 1 && (intent.status !== 'settled' || intent.tx?.toLowerCase() !== paying[0]!.tx)) violations.push(`intent ${intent.id} paid in ${paying[0]!.tx} but ${intent.status} (${intent.tx})`);
    if (paying.length === 0 && intent.status === 'settled') violations.push(`intent ${intent.id} settled without a transfer`);
    if (told.intents.get(intent.id)?.answeredSettled && intent.status !== 'settled') violations.push(`intent ${intent.id} was answered settled but is ${intent.status}`);
  }
  const known = new Set(rows.map((r) => BigInt(r.amount)));
  for (const p of toMerchant) if (!known.has(p.value)) violations.push(`transfer ${p.tx} to the merchant matches no intent`);
  return { name: 'every paid intent settled exactly once, none settling', checked: rows.length, violations };
}

/** Nothing left open once the recovery windows passed: payments, uploads, facilitator claims, intents. */
export async function nothingLeftOpen(cluster: Cluster): Promise<Check> {
  const rows = await cluster.testDb.database.query<{ what: string; row: string }>(sql`
    select 'pay-and-call payment' as what, concat_ws(' ', id, status, nonce, created_at) as row from wallet_payments where status in ('pending', 'unknown')
    union all select 'upload order', concat_ws(' ', id, status, payer, authorization_nonce, pending_since) from upload_orders where status = 'payment_pending'
    union all select 'facilitator settlement', concat_ws(' ', status, payer, nonce, tx_hash, 'validBefore', valid_before, 'claimed', claimed_at, 'updated', updated_at) from x402_settlements where status in ('claimed', 'broadcast')
    union all select 'intent', concat_ws(' ', id, status, failure_code, settling_since) from payment_intents where status = 'settling'`);
  return { name: 'nothing left open past the recovery windows', checked: 4, violations: rows.map((r) => `${r.what} still open: ${r.row}`) };
}

/** No event lost or acked twice: every publish answered is one event, acked; every settled intent's event once. */
export async function eventsExactlyOnce(cluster: Cluster, fx: Fixtures, told: EventsTold, until: Date): Promise<Check> {
  const db = cluster.testDb.database;
  const violations: string[] = [];
  const published = await db.query<{ id: string; key: string; status: string }>(
    sql`select id, deduplication_key as key, status from events where queue_id = ${fx.queues.published}`,
  );
  const byKey = new Map<string, string[]>();
  for (const e of published) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e.id]);
  for (const [key, id] of told.published) {
    const ids = byKey.get(key) ?? [];
    if (ids.length !== 1 || ids[0] !== id) violations.push(`publish ${key} answered ${id}, the queue holds ${JSON.stringify(ids)}`);
  }
  const ours = await db.query<{ id: string; status: string; queue_id: string }>(
    // Events made before `until` (the consumers were stopped later; a schedule's next tick may fire meanwhile).
    sql`select id, status, queue_id from events where queue_id in (${fx.queues.published}, ${fx.queues.scheduled}, ${fx.queues.intents}) and created_at <= ${until}`,
  );
  for (const e of ours) {
    if (e.status !== 'acked') violations.push(`event ${e.id} is ${e.status}`);
    else if (!told.acks.has(e.id)) violations.push(`event ${e.id} acked, but no consumer's ack was accepted`);
  }
  for (const [id, tokens] of told.acks) if (tokens.size > 1) violations.push(`event ${id} acked under ${tokens.size} different leases`);
  // The project's intent events: one payment_intent.settled per settled intent, none for another.
  const intentEvents = await db.query<{ intent_id: string; n: number }>(
    sql`select payload->>'intentId' as intent_id, count(*)::int as n from events where queue_id = ${fx.queues.intents} and payload->>'type' = 'payment_intent.settled' group by 1`,
  );
  const settled = await db.query<{ id: string }>(sql`select id from payment_intents where merchant_id = ${fx.merchantId} and status = 'settled'`);
  const eventsOf = new Map(intentEvents.map((r) => [r.intent_id, r.n]));
  for (const { id } of settled) if (eventsOf.get(id) !== 1) violations.push(`settled intent ${id} has ${eventsOf.get(id) ?? 0} settled events`);
  for (const [id] of eventsOf) if (!settled.some((s) => s.id === id)) violations.push(`a settled event for intent ${id}, which is not settled`);
  return { name: '0 events lost or acked twice', checked: ours.length + told.published.size, violations };
}

/** The minute boundaries in (from, to]. */
function minutesBetween(from: Date, to: Date): number[] {
  const ticks: number[] = [];
  for (let t = Math.floor(from.getTime() / MINUTE) * MINUTE + MINUTE; t <= to.getTime(); t += MINUTE) ticks.push(t);
  return ticks;
}

/** Every schedule tick fired once: the schedules' events, and the trading runtimes' executions. */
export async function ticksFiredOnce(cluster: Cluster, fx: Fixtures, until: Date): Promise<{ check: Check; scheduleTicks: number; tradingTicks: number }> {
  const db = cluster.testDb.database;
  const violations: string[] = [];
  const fired = await db.query<{ schedule_id: string; at: Date; n: number }>(
    sql`select schedule_id, scheduled_for as at, count(*)::int as n from events where queue_id = ${fx.queues.scheduled} group by 1, 2`,
  );
  const ticks = minutesBetween(fx.schedulesFrom, until);
  let scheduleTicks = 0;
  for (const id of fx.scheduleIds) {
    const mine = fired.filter((f) => f.schedule_id === id);
    for (const f of mine) if (f.n !== 1) violations.push(`schedule ${id} fired ${new Date(f.at).toISOString()} ${f.n} times`);
    for (const t of ticks) if (!mine.some((f) => new Date(f.at).getTime() === t)) violations.push(`schedule ${id} never fired ${new Date(t).toISOString()}`);
    scheduleTicks += mine.length;
  }
  const executions = await db.query<{ runtime_id: string; at: Date; n: number }>(
    sql`select runtime_id, scheduled_at as at, count(*)::int as n from trading_executions where trigger_type = 'schedule' and runtime_id in (${sql.join(fx.runtimeIds.map((id) => sql`${id}`), sql`, `)}) group by 1, 2`,
  );
  const tradingTicks = minutesBetween(fx.runtimesFrom, until);
  let executed = 0;
  for (const id of fx.runtimeIds) {
    const mine = executions.filter((e) => e.runtime_id === id);
    for (const e of mine) if (e.n !== 1) violations.push(`runtime ${id} ran ${new Date(e.at).toISOString()} ${e.n} times`);
    for (const t of tradingTicks) if (!mine.some((e) => new Date(e.at).getTime() === t)) violations.push(`runtime ${id} has no execution for ${new Date(t).toISOString()}`);
    executed += mine.length;
  }
  return { check: { name: 'every schedule tick fired once', checked: ticks.length * fx.scheduleIds.length + tradingTicks.length * fx.runtimeIds.length, violations }, scheduleTicks, tradingTicks: executed };
}

/** Every settled payment (every payment our relayers sent) indexed, published and attested by the deployment's key. */
export async function everyPaymentIndexed(cluster: Cluster, chain: { payments: ChainPayment[] }): Promise<Check> {
  const violations: string[] = [];
  const rows = await cluster.testDb.database.query<{
    payment_id: Hex; payer: Address; recipient: Address; value: string; token: Address; tx: string; log_index: number; chain_id: number; sequence: string | null; signature: Hex | null; signer: string | null;
  }>(sql`select payment_id, payer, recipient, value::text, token, transaction_hash as tx, log_index, chain_id, recipient_sequence::text as sequence, signature, signer from indexed_payments`);
  const indexed = new Map(rows.map((r) => [`${r.tx.toLowerCase()}:${r.log_index}`, r]));
  const relayers = new Set(cluster.relayers);
  const senders = new Map<string, Address>();
  for (const tx of new Set(chain.payments.map((p) => p.tx))) senders.set(tx, getAddress((await cluster.pub.getTransaction({ hash: tx as Hex })).from));
  const domain = { name: 'Tollgate Payment Attestation', version: '2' } as const;
  const types = {
    PaymentAttestation: [
      { name: 'paymentId', type: 'bytes32' },
      { name: 'payer', type: 'address' },
      { name: 'recipient', type: 'address' },
      { name: 'recipientSequence', type: 'uint256' },
      { name: 'token', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
  } as const;
  for (const p of chain.payments) {
    if (!relayers.has(senders.get(p.tx)!)) {
      violations.push(`payment ${p.tx} was sent by ${senders.get(p.tx)}, not by a relayer of the cluster`);
      continue;
    }
    const row = indexed.get(`${p.tx}:${p.logIndex}`);
    if (!row) {
      violations.push(`payment ${p.tx}:${p.logIndex} not indexed`);
      continue;
    }
    if (!row.signature || row.sequence === null) {
      violations.push(`payment ${p.tx}:${p.logIndex} indexed but not published`);
      continue;
    }
    const valid = await verifyTypedData({
      address: cluster.attestationSigner,
      domain: { ...domain, chainId: row.chain_id },
      types,
      primaryType: 'PaymentAttestation',
      message: { paymentId: row.payment_id, payer: getAddress(row.payer), recipient: getAddress(row.recipient), recipientSequence: BigInt(row.sequence), token: getAddress(row.token), amount: BigInt(row.value) },
      signature: row.signature,
    });
    if (!valid || getAddress(row.payer) !== p.payer || getAddress(row.recipient) !== p.to || BigInt(row.value) !== p.value) violations.push(`payment ${p.tx}:${p.logIndex}: its attestation does not verify or does not describe it`);
  }
  // Sequences per recipient: 1..n, contiguous, never reused.
  const byRecipient = new Map<string, number[]>();
  for (const r of rows) if (r.sequence !== null) byRecipient.set(r.recipient, [...(byRecipient.get(r.recipient) ?? []), Number(r.sequence)]);
  for (const [recipient, sequences] of byRecipient) {
    const sorted = sequences.sort((a, b) => a - b);
    if (sorted.some((s, i) => s !== i + 1)) violations.push(`recipient ${recipient}: sequences ${sorted.join(',')} are not 1..${sorted.length}`);
  }
  return { name: 'every settled payment indexed with its attestation', checked: chain.payments.length, violations };
}

interface LoopReport {
  name: string;
  leader: boolean;
  active: boolean;
}

/** Every leader loop active on exactly one worker (asked through each worker's admin socket), once things settle. */
export async function leadersOnce(cluster: Cluster, settleMs = 20_000): Promise<Check> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const reports = await Promise.all(
      cluster.byRole('worker').map(async (node) => ({ node: node.name, loops: (((await callAdminSocket(node.dataDir, 'status', {})) as { loops: LoopReport[] } | null)?.loops ?? []) })),
    );
    const leaders = new Map<string, string[]>();
    for (const { node, loops } of reports) for (const loop of loops) if (loop.leader) leaders.set(loop.name, [...(leaders.get(loop.name) ?? []), ...(loop.active ? [node] : [])]);
    const violations = [...leaders].filter(([, on]) => on.length !== 1).map(([name, on]) => `leader loop ${name} active on ${on.length ? on.join(', ') : 'no node'}`);
    if (leaders.size === 0) violations.push('no worker reported a leader loop');
    if (violations.length === 0 || Date.now() > deadline) return { name: 'every leader loop on exactly one node', checked: leaders.size, violations };
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
