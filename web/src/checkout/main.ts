// The hosted checkout: opened at an intent's paymentUrl (GET, Accept: text/html). It reads the intent's
// public view, pays it with the browser's wallet (EIP-1193 → EIP-712 signature → POST pay, the same
// x402 contract any client uses), or shows how to pay it with any x402 client, and follows it live until
// it is settled. No API key is ever here.
import '../shared/styles.css';
import './checkout.css';
import { h, liveTime, mount, notice } from '../shared/dom.js';
import { expiry, networkName, tokenAmount, usd, when } from '../shared/format.js';
import { HttpError, json, request } from '../shared/http.js';
import { onServerClock, serverNow } from '../shared/server-time.js';
import { offerToken, useChain } from './chain.js';
import { copyable } from './copy.js';
import { depositSection, type DepositView } from './deposit.js';
import { paymentHref } from './explorer-link.js';
import { returnHref } from './return-url.js';
import { otherWays } from './ways.js';
import { challengeOf, chainIdOf, signPayment, type Eip1193 } from './x402.js';

interface CheckoutView {
  id: string;
  status: 'pending' | 'settling' | 'settled' | 'failed' | 'expired';
  amountUsdCents: number;
  amount: string;
  network: string;
  asset: string;
  payTo: string;
  /** Absent fields are read as unknown, never as an error: the page degrades to what it has. */
  merchant?: { name?: string } | null;
  merchantName?: string | null;
  /** Where "Back to {merchant}" leads once settled (http or https only; the server validates it too). */
  returnUrl?: string | null;
  description: string | null;
  expiresAt: string;
  settledAt: string | null;
  transactionHash: string | null;
  failureCode: string | null;
  failureMoneyMoved: 'none' | 'not_for_this_intent' | 'unknown' | null;
  /** The last payment that verified but did not pay this request, which stayed payable (nothing was charged for it). */
  lastPaymentError?: { code: string; at: string } | null;
  /** Who paid it, once settled (the x402 payer, or the sender of the deposit that completed it). */
  payer?: string | null;
  /** How it was paid: x402 or deposit. */
  paidVia?: 'x402' | 'deposit' | null;
  /** The request's own deposit address, with what is still due and its EIP-681 URI (absent from older servers). */
  deposit?: DepositView | null;
}

const root = document.getElementById('checkout')!;
const intentId = decodeURIComponent(location.pathname.split('/').at(-2) ?? '');
const payPath = `/v1/payment-intents/${encodeURIComponent(intentId)}/pay`;
const POLL_MS = 2000;
const checkoutPath = `/v1/payment-intents/${encodeURIComponent(intentId)}/checkout`;

let view: CheckoutView | null = null;
let busy = false;
/** What the pay button says while a payment is under way: the wallet first, then the chain. */
let busyWords = 'Waiting for your wallet…';
let message: HTMLElement | null = null;

/** Words a payer understands, for the refusals pay can answer. */
const REASONS: Record<string, string> = {
  insufficient_funds: 'Your wallet does not hold enough USDG for this payment.',
  invalid_exact_evm_insufficient_balance: 'Your wallet does not hold enough USDG for this payment.',
  invalid_exact_evm_payload_authorization_valid_before: 'The signed payment expired before it arrived; try again.',
  invalid_exact_evm_payload_signature: 'The wallet produced a signature the token does not accept.',
  invalid_exact_evm_transaction_failed: 'The payment’s transaction failed on chain and moved nothing. Try again.',
  facilitator_unavailable: 'The payment could not be settled right now, and nothing was sent. Try again in a moment.',
  settlement_in_progress: 'A payment for this request is already being settled.',
  intent_expired: 'This payment request has expired.',
  merchant_disabled: 'This merchant is not accepting payments right now.',
};

/** Why the last payment did not go through (docs/intents.md, lastPaymentError), said to whoever has the page open. */
const LAST_ATTEMPT: Record<string, string> = {
  invalid_exact_evm_insufficient_balance: 'the paying wallet did not hold enough USDG when it was settled (another payment may have spent it first). Top it up, then pay again.',
  invalid_exact_evm_payload_authorization_valid_before: 'the signed payment expired before it could be settled. Pay again.',
  authorization_expired: 'the signed payment expired before it could be settled. Pay again.',
  invalid_exact_evm_transaction_failed: 'its transaction failed on chain and moved nothing. Pay again.',
  invalid_exact_evm_nonce_already_used: 'that signature had already been used for another payment. Pay again with a new one.',
  facilitator_unavailable: 'the payment service could not settle it at that moment and sent nothing. Try again in a moment.',
};

function lastAttemptWords(error: { code: string; at: string }): string {
  const why = LAST_ATTEMPT[error.code] ?? `it was refused (${error.code}). Pay again.`;
  return `A payment for this request (${when(error.at)}) did not go through: ${why} Nothing was charged for it, and this request can still be paid.`;
}

const ASK = 'Contact the merchant with this page’s link before paying again.';

/** What a failed intent means for the payer's money, as the server decides it from the failure code. */
function failedWords(code: string | null, moneyMoved: CheckoutView['failureMoneyMoved']): string {
  const what =
    moneyMoved === 'none'
      ? 'No money moved. Ask the merchant for a new payment link.'
      : moneyMoved === 'not_for_this_intent'
        ? `A transfer was made on chain for it, but it did not pay this request (another recipient or amount, or already counted for another payment request). ${ASK}`
        : `Money may have moved: check your wallet’s history. ${ASK}`;
  // In words only: the code means nothing to a payer (the merchant sees it on the intent).
  void code;
  return `This payment failed and can no longer be paid. ${what}`;
}

async function load(): Promise<void> {
  try {
    view = await json<CheckoutView>('GET', checkoutPath);
  } catch (error) {
    const missing = error instanceof HttpError && error.status === 404;
    mount(root, h('h1', {}, missing ? 'Payment request not found' : 'This page could not load'), notice('error', missing ? 'Check the link you were given, or ask the merchant for a new one.' : String((error as Error).message)));
    return;
  }
  render();
  follow();
}

let timer: ReturnType<typeof setTimeout> | null = null;
/** One poll at a time, while the intent can still change. */
function follow(): void {
  if (timer || !view || (view.status !== 'pending' && view.status !== 'settling')) return;
  timer = setTimeout(() => {
    timer = null;
    void refresh();
  }, POLL_MS);
}

/** Live: the view is read again while it can still change, so a settlement shows up without a reload. */
async function refresh(): Promise<void> {
  if (!busy) {
    try {
      const next = await json<CheckoutView>('GET', checkoutPath);
      // A payment that did not go through (from another tab, say) is news too: the page says so.
      if (!view || next.status !== view.status || next.transactionHash !== view.transactionHash || next.lastPaymentError?.at !== view.lastPaymentError?.at || next.deposit?.due !== view.deposit?.due) {
        view = next;
        if (next.status !== 'pending') message = null;
        render();
      }
    } catch {
      // A failed poll changes nothing on screen; the next one tries again.
    }
  }
  follow();
}

const merchantOf = (v: CheckoutView) => v.merchantName || v.merchant?.name || null;

/** The intent's status now (the service's clock: the payer's may be hours off): a pending one past its expiry is expired here already. */
function statusOf(v: CheckoutView, now = serverNow()): string {
  return v.status === 'expired' || (v.status === 'pending' && new Date(v.expiresAt).getTime() <= now) ? 'expired' : v.status;
}

/** "Expires in 4 min", "Expired 3 min ago" (live, on the service's clock); just "Expired" when the server says so before the clock does. */
const expiryWords = (v: CheckoutView) => (iso: string, localNow: number) => {
  const now = onServerClock(localNow);
  return new Date(iso).getTime() > now && statusOf(v, now) === 'expired' ? 'Expired' : expiry(iso, now);
};

let shownStatus: string | null = null;

function render(): void {
  if (!view) return;
  const status = statusOf(view);
  const merchant = merchantOf(view);
  shownStatus = status;
  mount(
    root,
    h('p', { class: 'muted' }, merchant ? ['Pay ', h('strong', {}, merchant)] : 'Payment request'),
    h('h1', { class: 'amount' }, usd(view.amountUsdCents), h('span', { class: 'unit' }, ' in USDG')),
    view.description ? h('p', {}, view.description) : null,
    h(
      'dl',
      {},
      h('dt', {}, 'Status'),
      h('dd', {}, h('span', { class: `badge ${status}`, 'data-testid': 'status' }, status)),
      h('dt', {}, 'Amount'),
      h('dd', { 'data-testid': 'token-amount' }, tokenAmount(view.amount, view.network, view.asset)),
      h('dt', {}, 'Payee'),
      h('dd', {}, merchant ? [merchant, h('br'), h('code', { 'data-testid': 'payee' }, view.payTo)] : h('code', { 'data-testid': 'payee' }, view.payTo)),
      h('dt', {}, 'Network'),
      h('dd', { 'data-testid': 'network' }, networkName(view.network)),
      h('dt', {}, status === 'settled' ? 'Paid' : 'Expiry'),
      h('dd', {}, status === 'settled' ? when(view.settledAt) : [expiresAt(view), h('br'), h('span', { class: 'muted' }, when(view.expiresAt))]),
    ),
    // A refusal in words goes right under what it is about (the pay button), before the other ways to pay.
    [body(status)].flat().flatMap((part, i) => (i === 0 ? [part, message] : [part])),
  );
}

/** The expiry, said relative to now and rewritten each second; not announced each time it changes. */
function expiresAt(v: CheckoutView): HTMLElement {
  const time = liveTime(v.expiresAt, expiryWords(v));
  time.setAttribute('data-testid', 'expiry');
  time.setAttribute('aria-live', 'off');
  return time;
}

/** A pending intent that reaches its expiry turns expired on the page without waiting for a poll. */
function tick(): void {
  if (view && statusOf(view) !== shownStatus) render();
}

const payUrl = () => `${location.origin}/v1/payment-intents/${encodeURIComponent(view!.id)}/pay`;

function body(status: string): HTMLElement | HTMLElement[] {
  const v = view!;
  switch (status) {
    case 'settled':
      return settled(v);
    case 'settling':
      return notice('info', 'Your payment was accepted and is being settled on chain. This page updates by itself.');
    case 'expired':
      return notice('error', 'This payment request has expired and can no longer be paid. Ask the merchant for a new payment link. Nothing was charged.');
    case 'failed':
      return notice('error', failedWords(v.failureCode, v.failureMoneyMoved));
    default: {
      const target = { payUrl: payUrl(), api: location.origin, network: v.network, asset: v.asset, amount: v.amount, words: tokenAmount(v.amount, v.network, v.asset) };
      // This tab's own refusal (message) already says why; otherwise the last attempt made from anywhere.
      const last = v.lastPaymentError && !message ? notice('error', lastAttemptWords(v.lastPaymentError)) : null;
      // Any wallet or exchange: the request's own deposit address (open at once without a browser wallet, as on a phone).
      const deposit = v.deposit ? depositSection({ deposit: v.deposit, network: v.network, asset: v.asset, amount: v.amount }, !wallet()) : null;
      const ways = wallet()
        ? [h('button', { type: 'button', onclick: () => void pay(), disabled: busy }, busy ? busyWords : `Pay ${usd(v.amountUsdCents)} with your wallet`), deposit, otherWays(target, false)]
        : [notice('info', 'No browser wallet was found in this browser. Pay from any wallet or exchange to this request\u2019s deposit address, or with any x402 client, from any device: this page turns settled when it is paid.'), deposit, otherWays(target, true)];
      const back = returnHref(v.returnUrl);
      // Before paying, the way back to the merchant without paying.
      const cancel = back ? h('a', { class: 'cancel', href: back, rel: 'noopener', 'data-testid': 'cancel' }, `Cancel and return to ${merchantOf(v) ?? 'the merchant'}`) : null;
      const shown = ways.filter((e): e is HTMLElement => e !== null);
      // Under the first way to pay, as a refusal of this tab's own is (render).
      return [...(last ? [shown[0]!, last, ...shown.slice(1)] : shown), ...(cancel ? [cancel] : [])];
    }
  }
}

/** Settled: the whole transaction hash to copy, linked to the payment in the explorer, and the way back to the merchant. */
function settled(v: CheckoutView): HTMLElement[] {
  const hash = v.transactionHash ?? '';
  // A deposit's transfer is the payer's own, not an x402 payment the explorer lists: shown, not linked.
  const byDeposit = v.paidVia === 'deposit';
  const link = byDeposit ? h('code', { 'data-testid': 'transaction', title: hash }, hash) : h('a', { href: paymentHref(hash, v.payTo), 'data-testid': 'transaction', title: hash }, h('code', {}, hash));
  const back = returnHref(v.returnUrl);
  const merchant = merchantOf(v);
  const payer = v.payer ? h('p', { 'data-testid': 'payer' }, 'Paid by ', h('code', {}, v.payer), byDeposit ? ', with a transfer to this request\u2019s deposit address.' : '.') : null;
  return [
    notice('success', 'Paid. The payment is settled on chain in this transaction', back ? '.' : '. You can close this page.'),
    hash ? copyable(link, hash, 'the transaction hash') : null,
    hash && !byDeposit ? h('p', { class: 'muted' }, 'The transaction links to the payment explorer, which checks the payment’s signed attestation in this browser.') : null,
    payer,
    back ? h('a', { class: 'button return', href: back, rel: 'noopener', 'data-testid': 'return' }, `Back to ${merchant ?? 'the merchant'}`) : null,
  ].filter((e): e is HTMLElement => e !== null);
}

const wallet = () => (window as unknown as { ethereum?: Eip1193 }).ethereum ?? null;

async function pay(): Promise<void> {
  const ethereum = wallet();
  if (!ethereum || !view || busy) return;
  busy = true;
  message = null;
  render();
  try {
    const [from] = (await ethereum.request({ method: 'eth_requestAccounts' })) as string[];
    if (!from) throw new Error('The wallet shared no account');
    const asked = await request<unknown>('POST', payPath);
    if (asked.status !== 402) return await settledOrRefused(asked.status, asked.body);
    const challenge = challengeOf(asked.response, asked.body);
    const requirement = challenge.accepts.find((r) => r.scheme === 'exact' && r.network.startsWith('eip155:'));
    // The page shows an amount; the payer signs for that amount to that payee, or not at all.
    if (!requirement || requirement.amount !== view.amount || requirement.payTo.toLowerCase() !== view.payTo.toLowerCase()) {
      throw new Error('The payment request does not match what this page shows; nothing was signed.');
    }
    // The wallet signs for the chain it is on: bring it to the intent's, adding the chain when it lacks it,
    // and offer it the token when it had to move (best effort, never in the way of paying).
    const moved = await useChain(ethereum, chainIdOf(requirement.network));
    if (moved !== 'there') await offerToken(ethereum, requirement.network, requirement.asset);
    // The authorization's window on the service's clock (this origin's Date headers, the 402's among them), not the payer's.
    const header = await signPayment(ethereum, from, challenge, requirement, Math.floor(serverNow() / 1000));
    // Signed: what is left is the chain's (seconds on a busy one), and the page says so.
    busyWords = 'Submitted, waiting for the chain…';
    render();
    const paid = await request<unknown>('POST', payPath, { headers: { 'payment-signature': header } });
    await settledOrRefused(paid.status, paid.body, paid.status === 402 ? challengeOf(paid.response, paid.body).error : undefined);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    message = notice('error', code === 4001 ? 'You declined the request in your wallet. Nothing was paid.' : (error as Error).message);
  } finally {
    busy = false;
    busyWords = 'Waiting for your wallet…';
    render();
    // The result has the focus (a keyboard or screen-reader user is told it, and the button they pressed is gone).
    focusResult();
  }
}

function focusResult(): void {
  const result = message?.isConnected ? message : root.querySelector<HTMLElement>('.notice.success, .notice.error');
  if (!result) return;
  result.setAttribute('tabindex', '-1');
  result.focus();
}

/** After pay: the intent as it now stands, and the refusal in words when there was one. */
async function settledOrRefused(status: number, body: unknown, reason?: string): Promise<void> {
  const answer = body as { code?: string; message?: string; error?: string } | null;
  if (status !== 200) {
    const code = reason ?? answer?.code ?? answer?.error ?? '';
    message = notice('error', REASONS[code] ?? answer?.message ?? `The payment was refused (${status}${code ? `, ${code}` : ''}).`);
  }
  view = await json<CheckoutView>('GET', checkoutPath);
  follow();
}

void load();
setInterval(tick, 1000);
// Back on the tab (after paying from a terminal or a phone, say): look at once rather than at the next poll.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState !== 'visible' || !timer) return;
  clearTimeout(timer);
  timer = null;
  void refresh();
});
