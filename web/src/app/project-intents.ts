// A project's payment intents on its page: a new intent made with the project's API key (its pay URL shown
// to copy), and the filtered, paged listing with its totals, refunds and CSV export.
import { copyButton, dataTable, field, h, liveTime, mount } from '../shared/dom.js';
import { expiry, shortHex, usd, usdCents, when } from '../shared/format.js';
import { HttpError, json } from '../shared/http.js';
import { actionForm, api, projectKeys, type Project } from './project-shared.js';
import { refundsPanel } from './refunds.js';

interface Intent {
  id: string;
  merchantId: string;
  externalId: string;
  status: string;
  amountUsdCents: number;
  paymentUrl: string;
  createdAt: string;
  expiresAt: string;
  transactionHash: string | null;
  /** The last payment that verified but did not pay it; it stayed payable (docs/intents.md). */
  lastPaymentError?: { code: string; message: string; at: string } | null;
  payTo: string;
  payer?: string | null;
  paidVia?: 'x402' | 'deposit' | null;
  receivedUsdCents?: number;
  refundedUsdCents?: number;
}
interface Totals { count: number; settledCount: number; settledUsdCents: number; receivedUsdCents: number; refundedUsdCents: number }

const INTENT_STATUSES = ['pending', 'settling', 'settled', 'failed', 'expired'];

/**
 * A payment intent made from the dashboard: the same POST /v1/payment-intents a merchant's server makes, with the
 * project's API key (from this tab's memory, or typed here and then kept in it). Its pay URL is shown to copy.
 */
export function newIntentSection(project: Project, showIntents: () => Promise<void>): HTMLElement {
  const merchants = project.merchants.filter((m) => m.enabled);
  const heading = h('h2', { id: 'new-intent' }, 'New payment intent');
  if (merchants.length === 0) return h('section', { class: 'card', 'aria-labelledby': 'new-intent' }, heading, h('p', {}, 'Add or enable a merchant first: an intent pays a merchant.'));
  const held = projectKeys.get(project.id);
  const merchant = h('select', { name: 'intentMerchant', required: true }, merchants.map((m) => h('option', { value: m.id }, m.name)));
  const amount = h('input', { name: 'amount', required: true, inputmode: 'decimal', pattern: '\\d{1,9}(\\.\\d{1,2})?', autocomplete: 'off', placeholder: '12.50', size: 10 });
  const externalId = h('input', { name: 'externalId', required: true, maxlength: 200, autocomplete: 'off', placeholder: 'order-1001' });
  const description = h('input', { name: 'description', maxlength: 500, autocomplete: 'off' });
  const returnUrl = h('input', { name: 'returnUrl', type: 'url', autocomplete: 'off' });
  const key = h('input', { name: 'projectApiKey', type: 'password', required: !held, autocomplete: 'off', placeholder: held ? `${project.apiKeys.find((k) => held.startsWith(k.prefix))?.prefix ?? ''}… (kept in this tab)` : 'svc_api_…' });
  const result = h('div');
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'new-intent' },
    heading,
    actionForm(
      'New payment intent',
      [
        field('Merchant to pay', merchant),
        field('Amount (USD)', amount, 'At least 1.00.'),
        field('Order reference', externalId, 'Your id for this payment (externalId): the same reference again answers the same intent.'),
        field('Description (optional)', description, 'Shown to the payer.'),
        field('Return URL (optional)', returnUrl, 'An https address (your thank-you page): the paid checkout offers “Back to” the merchant there.'),
        field(
          'Project API key',
          key,
          held
            ? 'Leave empty to use the key this tab was shown for this project. Kept in this tab only.'
            : 'Intents are created with one of this project’s API keys (shown once when made). Kept in this tab only, never stored.',
        ),
      ],
      'Create intent',
      async () => {
        mount(result);
        const cents = usdCents(amount.value);
        if (cents === null) throw new Error('Amount: dollars and cents, e.g. 12.50');
        const secret = key.value.trim() || projectKeys.get(project.id);
        if (!secret) throw new Error('Project API key: required');
        const body = {
          merchantId: merchant.value,
          amountUsdCents: cents,
          externalId: externalId.value.trim(),
          ...(description.value.trim() ? { description: description.value.trim() } : {}),
          ...(returnUrl.value.trim() ? { returnUrl: returnUrl.value.trim() } : {}),
        };
        let intent: Intent;
        try {
          // The intents API answers the intent itself, not an envelope.
          intent = await json<Intent>('POST', '/v1/payment-intents', { token: secret, body });
        } catch (error) {
          if (key.value.trim() === '' && error instanceof HttpError && error.status === 401) projectKeys.delete(project.id); // revoked meanwhile
          throw error;
        }
        projectKeys.set(project.id, secret);
        key.value = '';
        key.required = false;
        key.placeholder = `${project.apiKeys.find((k) => secret.startsWith(k.prefix))?.prefix ?? ''}… (kept in this tab)`;
        const url = h('code', { 'data-testid': 'pay-url' }, intent.paymentUrl);
        const name = merchants.find((m) => m.id === intent.merchantId)?.name ?? intent.merchantId;
        mount(
          result,
          h(
            'div',
            { class: 'notice success', role: 'status' },
            h('p', {}, `Intent ${intent.externalId} for ${usd(intent.amountUsdCents)} to ${name}: `, h('span', { class: `badge ${intent.status}` }, intent.status), ' ', liveTime(intent.expiresAt, expiry, when(intent.expiresAt)), '.'),
            h('p', {}, 'Send the payer this pay URL: a browser opens the checkout, an x402 client pays it.'),
            h('div', { class: 'row' }, url, copyButton(intent.paymentUrl, 'Copy the pay URL', url), h('a', { href: intent.paymentUrl, target: '_blank', rel: 'noopener' }, 'Open the checkout')),
          ),
        );
        externalId.value = '';
        await showIntents();
      },
    ),
    result,
  );
}

export async function intentsSection(section: HTMLElement, project: Project, query: URLSearchParams): Promise<void> {
  const merchantId = query.get('merchant') ?? '';
  const status = query.get('status') ?? '';
  const search = query.get('externalId') ?? '';
  const before = query.get('before') ?? '';
  const filters = { ...(merchantId ? { merchantId } : {}), ...(status ? { status } : {}), ...(search ? { externalId: search } : {}) };
  const params = new URLSearchParams({ limit: '20', ...filters, ...(before ? { before } : {}) });
  const [intents, totals] = await Promise.all([
    api<Intent[]>('GET', `/v1/projects/${project.id}/payment-intents?${params}`),
    api<Totals>('GET', `/v1/projects/${project.id}/payment-intents/totals?${new URLSearchParams(filters)}`),
  ]);
  const merchantName = new Map(project.merchants.map((m) => [m.id, m.name]));
  const go = (changes: Record<string, string>) => {
    const next = new URLSearchParams({ ...(merchantId ? { merchant: merchantId } : {}), ...(status ? { status } : {}), ...(search ? { externalId: search } : {}), ...changes });
    for (const [k, v] of [...next]) if (!v) next.delete(k);
    location.hash = `#/projects/${project.id}?${next}`;
  };
  const merchantSelect = h('select', { name: 'merchant', onchange: (e: Event) => go({ merchant: (e.target as HTMLSelectElement).value, before: '' }) }, h('option', { value: '' }, 'All merchants'), project.merchants.map((m) => h('option', { value: m.id, selected: m.id === merchantId }, m.name)));
  const statusSelect = h('select', { name: 'status', onchange: (e: Event) => go({ status: (e.target as HTMLSelectElement).value, before: '' }) }, h('option', { value: '' }, 'Any status'), INTENT_STATUSES.map((s) => h('option', { value: s, selected: s === status }, s)));
  const searchInput = h('input', { name: 'externalId', type: 'search', maxlength: 200, autocomplete: 'off', value: search, placeholder: 'order-1001' });
  const reloadIntents = () => intentsSection(section, project, query);
  mount(
    section,
    h('h2', { id: 'intents' }, 'Payment intents'),
    h(
      'form',
      { class: 'inline row', role: 'search', 'aria-label': 'Filter payment intents', onsubmit: (e: Event) => (e.preventDefault(), go({ externalId: searchInput.value.trim(), before: '' })) },
      field('Merchant', merchantSelect),
      field('Status', statusSelect),
      field('External id starts with', searchInput),
      h('button', { type: 'submit', class: 'secondary' }, 'Search'),
    ),
    h(
      'p',
      { 'data-testid': 'intent-totals' },
      `${totals.count} intent${totals.count === 1 ? '' : 's'}; ${totals.settledCount} settled for ${usd(totals.settledUsdCents)}; received ${usd(totals.receivedUsdCents)}; refunded ${usd(totals.refundedUsdCents)}. `,
      h('button', { type: 'button', class: 'secondary', onclick: () => void exportCsv(project, filters, merchantName) }, 'Export CSV'),
    ),
    intents.length === 0
      ? h('p', {}, 'No intents match.')
      : dataTable(
          ['Created', 'Merchant', 'External id', 'Amount', 'Status', 'Expires', 'Paid by', 'Transaction', 'Refunds', 'Pay URL'],
          intents.map((i) => ({
            attrs: { 'data-intent-id': i.id },
            cells: [
              when(i.createdAt),
              merchantName.get(i.merchantId) ?? i.merchantId,
              i.externalId,
              [usd(i.amountUsdCents), i.receivedUsdCents && i.receivedUsdCents !== (i.status === 'settled' ? i.amountUsdCents : 0) ? h('p', { class: 'muted' }, `received ${usd(i.receivedUsdCents)}`) : null],
              [
                h('span', { class: `badge ${i.status}` }, i.status),
                i.paidVia ? h('p', { class: 'muted' }, i.paidVia === 'deposit' ? 'by deposit' : 'by x402') : null,
                // Still payable after a payment that did not go through: what happened, and when.
                i.status === 'pending' && i.lastPaymentError
                  ? h('p', { class: 'muted', 'data-testid': 'last-payment-error', title: i.lastPaymentError.code }, `Last payment not settled (${when(i.lastPaymentError.at)}): ${i.lastPaymentError.message}`)
                  : null,
              ],
              i.status === 'pending' ? liveTime(i.expiresAt, expiry, when(i.expiresAt)) : '—',
              i.payer ? h('code', { title: i.payer, 'data-testid': 'payer' }, shortHex(i.payer)) : '—',
              i.transactionHash
                ? i.paidVia === 'deposit'
                  ? h('code', { title: i.transactionHash }, shortHex(i.transactionHash))
                  : h('a', { href: `#/explorer?${new URLSearchParams({ transaction: i.transactionHash, recipient: i.payTo })}`, title: i.transactionHash }, h('code', {}, shortHex(i.transactionHash)))
                : '—',
              (i.receivedUsdCents ?? 0) > 0 || (i.refundedUsdCents ?? 0) > 0 ? refundsPanel(project.id, i, reloadIntents) : '—',
              h(
                'div',
                { class: 'row' },
                h('a', { href: i.paymentUrl, target: '_blank', rel: 'noopener' }, 'Checkout page'),
                i.status === 'pending' ? copyButton(i.paymentUrl, `Copy the pay URL of ${i.externalId}`) : null,
              ),
            ],
          })),
        ),
    intents.length === 20 ? h('button', { type: 'button', class: 'secondary', onclick: () => go({ before: intents.at(-1)!.id }) }, 'Older intents') : null,
    before ? h('button', { type: 'button', class: 'secondary', onclick: () => go({ before: '' }) }, 'Newest') : null,
  );
}

/** Every intent the filters select (all pages, 100 a request), as CSV the browser downloads. */
async function exportCsv(project: Project, filters: Record<string, string>, merchantName: Map<string, string>): Promise<void> {
  const rows: Intent[] = [];
  for (let before = ''; ; ) {
    const page = await api<Intent[]>('GET', `/v1/projects/${project.id}/payment-intents?${new URLSearchParams({ limit: '100', ...filters, ...(before ? { before } : {}) })}`);
    rows.push(...page);
    if (page.length < 100) break;
    before = page.at(-1)!.id;
  }
  const cell = (value: unknown) => {
    const text = value === null || value === undefined ? '' : String(value);
    // Quoted when it must be; a leading = + - @ is kept as text by spreadsheets (no formula injection).
    const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
    return /[",\n\r]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
  };
  const head = ['id', 'createdAt', 'merchant', 'externalId', 'amountUsd', 'status', 'paidVia', 'payer', 'transactionHash', 'receivedUsd', 'refundedUsd', 'settledAt'];
  const lines = rows.map((i) =>
    [i.id, i.createdAt, merchantName.get(i.merchantId) ?? i.merchantId, i.externalId, (i.amountUsdCents / 100).toFixed(2), i.status, i.paidVia ?? '', i.payer ?? '', i.transactionHash ?? '', ((i.receivedUsdCents ?? 0) / 100).toFixed(2), ((i.refundedUsdCents ?? 0) / 100).toFixed(2), (i as { settledAt?: string | null }).settledAt ?? ''].map(cell).join(','),
  );
  const url = URL.createObjectURL(new Blob([[head.join(','), ...lines].join('\r\n') + '\r\n'], { type: 'text/csv' }));
  const link = h('a', { href: url, download: `intents-${project.id}.csv` });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
