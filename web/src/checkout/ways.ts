// Paying without a browser wallet: the pay URL and two snippets that pay it, for the payer to copy. Both
// are exercised verbatim by test/web/checkout-anyone.test.ts (the first run by Node, the second by bash).
import { copyButton, h } from '../shared/dom.js';
import { copyable } from './copy.js';

export interface PayTarget {
  /** The intent's paymentUrl: POST there is the x402 pay contract. */
  payUrl: string;
  /** This service's origin, where a Tollgate wallet's pay-and-call is. */
  api: string;
  network: string;
  asset: string;
  /** Atomic units the challenge asks for. */
  amount: string;
  /** The amount as people read it ("12.34 USDG"). */
  words: string;
}

/**
 * Only characters that need no quoting in a shell or a JS string go into the snippets (an intent id is a
 * UUID and the origin a host and port): anything else, and the page shows no snippet rather than one that
 * could be made to run something else.
 */
const PLAIN = /^[\w.:/%~[\]-]+$/;
export const snippetSafe = (t: PayTarget) => [t.payUrl, t.api, t.network, t.asset, t.amount].every((part) => PLAIN.test(part));

/** The official x402 client for Node (@x402/fetch), allowed this token up to exactly this amount. */
export function x402FetchSnippet(t: PayTarget): string {
  return `// npm install @x402/fetch @x402/evm viem   then: PRIVATE_KEY=0x… node pay.mjs
// PRIVATE_KEY: an account holding ${t.words} on ${t.network} (it needs no gas).
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { privateKeyToAccount } from 'viem/accounts';

const client = x402Client.fromConfig({
  schemes: [{ network: '${t.network}', client: new ExactEvmScheme(privateKeyToAccount(process.env.PRIVATE_KEY)) }],
  // Not one of the client's default tokens: allowed here, for this payment's amount at most.
  spendControls: { allowedAssets: [{ network: '${t.network}', asset: '${t.asset}', maxAmountPerPayment: '${t.amount}' }] },
});
const response = await wrapFetchWithPayment(fetch, client)('${t.payUrl}', { method: 'POST' });
console.log(response.status, await response.text());
`;
}

/** A Tollgate wallet pays it: pay-and-call with the wallet's key, within maxPayment (docs/wallets.md). */
export function payAndCallSnippet(t: PayTarget): string {
  const body = JSON.stringify({ url: t.payUrl, method: 'POST', maxPayment: { network: t.network, asset: t.asset, amount: t.amount } });
  return `# TOLLGATE_WALLET_KEY: a Tollgate wallet's key (svc_wallet_…) holding ${t.words}
curl -sS -X POST '${t.api}/v1/wallets/me/pay-and-call' \\
  -H "authorization: Bearer $TOLLGATE_WALLET_KEY" \\
  -H 'content-type: application/json' \\
  -d '${body}'
`;
}

/**
 * A snippet takes the card's whole width (it scrolls sideways in its own box); its Copy button sits by its title, a
 * heading one level below the section's (an h2 when folded under a summary, which is no heading: no level skipped).
 */
function snippet(title: string, text: string, testId: string, what: string, level: 'h2' | 'h3'): HTMLElement[] {
  const pre = h('pre', { 'data-testid': testId, tabindex: 0 }, h('code', {}, text));
  return [h('div', { class: 'snippet-head' }, h(level, {}, title), copyButton(text, `Copy ${what}`, pre)), pre];
}

/** The pay URL to copy and the snippets, with what they pay; open (no wallet) or folded under the pay button. */
export function otherWays(t: PayTarget, open: boolean): HTMLElement {
  const content = [
    h('p', {}, 'POST this URL with any x402 v2 client (scheme exact, EIP-3009); it pays ', h('strong', {}, t.words), ' on ', t.network, ':'),
    copyable(h('code', { 'data-testid': 'pay-url' }, t.payUrl), t.payUrl, 'the pay URL'),
    ...(snippetSafe(t)
      ? [
          ...snippet('With @x402/fetch (Node.js)', x402FetchSnippet(t), 'snippet-x402-fetch', 'the @x402/fetch snippet', open ? 'h3' : 'h2'),
          ...snippet('With a Tollgate wallet (curl)', payAndCallSnippet(t), 'snippet-pay-and-call', 'the curl snippet', open ? 'h3' : 'h2'),
        ]
      : []),
    h('p', { class: 'muted' }, 'This page follows the payment and shows it settled, wherever it was paid from.'),
  ];
  return open
    ? h('section', { class: 'ways', 'aria-labelledby': 'ways-title' }, h('h2', { id: 'ways-title' }, 'Pay with an x402 client'), content)
    : h('details', { class: 'ways' }, h('summary', {}, 'Other ways to pay'), content);
}
