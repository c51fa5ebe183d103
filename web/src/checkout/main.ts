// The hosted checkout: opened at an intent's paymentUrl (GET, Accept: text/html). It reads the intent's
// public view, pays it with the browser's wallet (EIP-1193 → EIP-712 signature → POST pay, the same
// x402 contract any client uses), and follows it live until it is settled. No API key is ever here.
import '../shared/styles.css';
import { h, mount, notice } from '../shared/dom.js';
import { relative, shortHex, usd, when } from '../shared/format.js';
import { HttpError, json, request } from '../shared/http.js';
import { challengeOf, chainIdOf, signPayment, type Eip1193 } from './x402.js';

interface CheckoutView {
  id: string;
  status: 'pending' | 'settling' | 'settled' | 'failed' | 'expired';
  amountUsdCents: number;
  amount: string;
  network: string;
  asset: string;
  payTo: string;
  merchant: { name: string };
  description: string | null;
  expiresAt: string;
  settledAt: string | null;
  transactionHash: string | null;
  failureCode: string | null;
  failureMoneyMoved: 'none' | 'not_for_this_intent' | 'unknown' | null;
}

const root = document.getElementById('checkout')!;
const intentId = decodeURIComponent(location.pathname.split('/').at(-2) ?? '');
const payPath = `/v1/payment-intents/${encodeURIComponent(intentId)}/pay`;
const POLL_MS = 2000;

let view: CheckoutView | null = null;
let busy = false;
let message: HTMLElement | null = null;

/** Words a payer understands, for the refusals pay can answer. */
const REASONS: Record<string, string> = {
  insufficient_funds: 'Your wallet does not hold enough USDG for this payment.',
  invalid_exact_evm_insufficient_balance: 'Your wallet does not hold enough USDG for this payment.',
  invalid_exact_evm_payload_authorization_valid_before: 'The signed payment expired before it arrived; try again.',
  invalid_exact_evm_payload_signature: 'The wallet produced a signature the token does not accept.',
  settlement_in_progress: 'A payment for this request is already being settled.',
  intent_expired: 'This payment request has expired.',
  merchant_disabled: 'This merchant is not accepting payments right now.',
};

const ASK = 'Contact the merchant with this page’s link before paying again.';

/** What a failed intent means for the payer's money, as the server decides it from the failure code. */
function failedWords(code: string | null, moneyMoved: CheckoutView['failureMoneyMoved']): string {
  const what =
    moneyMoved === 'none'
      ? 'No money moved. Ask the merchant for a new payment link.'
      : moneyMoved === 'not_for_this_intent'
        ? `A transfer was made on chain for it, but it did not pay this request (another recipient or amount, or already counted for another payment request). ${ASK}`
        : `Money may have moved: check your wallet’s history. ${ASK}`;
  return `This payment failed${code ? ` (${code})` : ''} and can no longer be paid. ${what}`;
}

async function load(): Promise<void> {
  try {
    view = await json<CheckoutView>('GET', `/v1/payment-intents/${encodeURIComponent(intentId)}/checkout`);
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
      const next = await json<CheckoutView>('GET', `/v1/payment-intents/${encodeURIComponent(intentId)}/checkout`);
      if (!view || next.status !== view.status || next.transactionHash !== view.transactionHash) {
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

function render(): void {
  if (!view) return;
  const expired = view.status === 'expired' || (view.status === 'pending' && new Date(view.expiresAt).getTime() <= Date.now());
  const status = expired ? 'expired' : view.status;
  mount(
    root,
    h('p', { class: 'muted' }, 'Pay ', h('strong', {}, view.merchant.name)),
    h('h1', { class: 'amount' }, usd(view.amountUsdCents), h('span', { class: 'unit' }, ' in USDG')),
    view.description ? h('p', {}, view.description) : null,
    h(
      'dl',
      {},
      h('dt', {}, 'Status'),
      h('dd', {}, h('span', { class: `badge ${status}`, 'data-testid': 'status' }, status)),
      h('dt', {}, status === 'settled' ? 'Paid' : 'Expires'),
      h('dd', {}, status === 'settled' ? when(view.settledAt) : `${when(view.expiresAt)} (${relative(view.expiresAt)})`),
      h('dt', {}, 'Network'),
      h('dd', {}, view.network),
    ),
    body(status),
    message,
  );
}

function body(status: string): HTMLElement {
  switch (status) {
    case 'settled':
      return notice('success', 'Paid. The payment is settled on chain in transaction ', h('code', { 'data-testid': 'transaction', title: view!.transactionHash ?? '' }, shortHex(view!.transactionHash ?? '')), '. You can close this page.');
    case 'settling':
      return notice('info', 'Your payment was accepted and is being settled on chain. This page updates by itself.');
    case 'expired':
      return notice('error', 'This payment request has expired and can no longer be paid. Ask the merchant for a new payment link. Nothing was charged.');
    case 'failed':
      return notice('error', failedWords(view!.failureCode, view!.failureMoneyMoved));
    default:
      return wallet()
        ? h('button', { type: 'button', onclick: () => void pay(), disabled: busy }, busy ? 'Waiting for your wallet…' : `Pay ${usd(view!.amountUsdCents)} with your wallet`)
        : notice('info', 'No browser wallet was found. Open this page in a browser with an Ethereum wallet (EIP-1193), or pay this URL with any x402 client.');
  }
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
    await useChain(ethereum, chainIdOf(requirement.network));
    const header = await signPayment(ethereum, from, challenge, requirement);
    const paid = await request<unknown>('POST', payPath, { headers: { 'payment-signature': header } });
    await settledOrRefused(paid.status, paid.body, paid.status === 402 ? challengeOf(paid.response, paid.body).error : undefined);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    message = notice('error', code === 4001 ? 'You declined the request in your wallet. Nothing was paid.' : (error as Error).message);
  } finally {
    busy = false;
    render();
  }
}

async function useChain(ethereum: Eip1193, chainId: number): Promise<void> {
  const current = Number.parseInt(String(await ethereum.request({ method: 'eth_chainId' })), 16);
  if (current === chainId) return;
  try {
    await ethereum.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: `0x${chainId.toString(16)}` }] });
  } catch {
    throw new Error(`Switch your wallet to chain ${chainId} to pay.`);
  }
}

/** After pay: the intent as it now stands, and the refusal in words when there was one. */
async function settledOrRefused(status: number, body: unknown, reason?: string): Promise<void> {
  const answer = body as { code?: string; message?: string; error?: string } | null;
  if (status !== 200) {
    const code = reason ?? answer?.code ?? answer?.error ?? '';
    message = notice('error', REASONS[code] ?? answer?.message ?? `The payment was refused (${status}${code ? `, ${code}` : ''}).`);
  }
  view = await json<CheckoutView>('GET', `/v1/payment-intents/${encodeURIComponent(intentId)}/checkout`);
  follow();
}

void load();
