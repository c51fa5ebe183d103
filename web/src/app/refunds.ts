// Refunds in the dashboard (docs/intents.md#refunds): the wallet that pays them (PATCH /v1/projects/{id} with one of
// its wallet credentials, which is sent once and never kept), and per intent its refunds and a form to refund more.
// Each refund the form sends carries an Idempotency-Key made for that submission: a double click or a retry of the
// same submission refunds once.
import { field, h, mount, notice } from '../shared/dom.js';
import { shortHex, usd, usdCents, when } from '../shared/format.js';
import { json } from '../shared/http.js';
import { session } from './session.js';

export interface Refund {
  id: string;
  amountUsdCents: number;
  status: 'pending' | 'succeeded' | 'failed';
  transaction: string | null;
  recipient: string;
  failureMessage: string | null;
  createdAt: string;
}

interface RefundableIntent {
  id: string;
  externalId: string;
  receivedUsdCents?: number;
  refundedUsdCents?: number;
}

const api = <T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => json<{ data: T }>(method, path, { token: session.token, body, headers }).then((r) => r.data);

/** The project's refund wallet: shown, set with a wallet credential of it, or cleared. */
export function refundWalletForm(project: { id: string; refundWalletId?: string | null }): HTMLElement {
  const feedback = h('div');
  const walletId = h('input', { name: 'refundWalletId', required: true, spellcheck: 'false', autocomplete: 'off', pattern: '[0-9a-fA-F\\-]{36}', value: project.refundWalletId ?? '' });
  const credential = h('input', { name: 'refundWalletCredential', type: 'password', required: true, autocomplete: 'off', placeholder: 'svc_wallet_…' });
  const save = async (body: Record<string, unknown>) => {
    mount(feedback);
    try {
      const changed = await api<{ refundWalletId: string | null }>('PATCH', `/v1/projects/${project.id}`, body);
      project.refundWalletId = changed.refundWalletId;
      credential.value = '';
      mount(feedback, notice('success', changed.refundWalletId ? `Refunds are paid from wallet ${changed.refundWalletId}.` : 'No refund wallet: refunds are refused until you name one.'));
    } catch (error) {
      mount(feedback, notice('error', (error as Error).message));
    }
  };
  const form = h(
    'form',
    {
      class: 'inline',
      'aria-label': 'Refund wallet',
      onsubmit: (event: Event) => {
        event.preventDefault();
        void save({ refundWalletId: walletId.value.trim(), refundWalletCredential: credential.value.trim() });
      },
    },
    field('Refund wallet id', walletId, 'A Tollgate wallet holding USDG (Wallets page).'),
    field('Wallet credential of it', credential, 'A svc_wallet_… credential of that wallet: it proves you may pay from it. Sent once, never kept.'),
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Use this refund wallet'), project.refundWalletId ? h('button', { type: 'button', class: 'secondary', onclick: () => void save({ refundWalletId: null }) }, 'Remove') : null),
  );
  return h('div', { 'data-testid': 'refund-wallet' }, form, feedback);
}

/** What may still be refunded of an intent, in cents. */
export const refundableOf = (intent: RefundableIntent) => (intent.receivedUsdCents ?? 0) - (intent.refundedUsdCents ?? 0);

/** The intents whose refunds panel is open: it stays open when the list is drawn again (after a refund, say). */
const openPanels = new Set<string>();

/** An intent's refunds and, when something is left to refund, a form for one more. */
export function refundsPanel(projectId: string, intent: RefundableIntent, changed: () => Promise<void>): HTMLElement {
  const body = h('div');
  const panel = h('details', { class: 'refunds', 'data-refunds-of': intent.id, ...(openPanels.has(intent.id) ? { open: true } : {}) }, h('summary', {}, `Refunds${intent.refundedUsdCents ? ` (${usd(intent.refundedUsdCents)})` : ''}`), body);
  panel.addEventListener('toggle', () => {
    if (!panel.open) return void openPanels.delete(intent.id);
    openPanels.add(intent.id);
    void fill();
  });
  const path = `/v1/projects/${projectId}/payment-intents/${intent.id}/refunds`;
  const fill = async () => {
    const refunds = await api<Refund[]>('GET', path);
    const left = refundableOf(intent);
    const amount = h('input', { name: 'refundAmount', required: true, inputmode: 'decimal', pattern: '\\d{1,9}(\\.\\d{1,2})?', autocomplete: 'off', size: 8, value: left > 0 ? (left / 100).toFixed(2) : '' });
    const feedback = h('div');
    // One key per submission made here: the same submission sent twice refunds once.
    let key = crypto.randomUUID();
    const form: HTMLFormElement = h(
      'form',
      {
        class: 'inline',
        'aria-label': `Refund ${intent.externalId}`,
        onsubmit: async (event: Event) => {
          event.preventDefault();
          const cents = usdCents(amount.value);
          if (cents === null || cents <= 0) return mount(feedback, notice('error', 'Amount: dollars and cents, e.g. 2.50'));
          if (!confirm(`Refund ${usd(cents)} of ${intent.externalId} to its payer?`)) return;
          form.querySelector('button')!.disabled = true;
          try {
            const refund = await api<Refund>('POST', path, { amountUsdCents: cents }, { 'idempotency-key': key });
            key = crypto.randomUUID();
            mount(feedback, notice(refund.status === 'failed' ? 'error' : 'success', refund.status === 'failed' ? `The refund failed and paid nothing: ${refund.failureMessage ?? ''}` : `Refund of ${usd(refund.amountUsdCents)}: ${refund.status}.`));
            await changed();
          } catch (error) {
            mount(feedback, notice('error', (error as Error).message));
          } finally {
            form.querySelector('button')!.disabled = false;
          }
        },
      },
      field(`Amount to refund (USD, at most ${usd(Math.max(0, left))})`, amount),
      h('button', { type: 'submit' }, 'Refund'),
    );
    mount(
      body,
      refunds.length === 0
        ? h('p', { class: 'muted' }, 'No refunds yet.')
        : h(
            'ul',
            { class: 'plain' },
            refunds.map((r) =>
              h('li', { 'data-refund-id': r.id }, `${usd(r.amountUsdCents)} `, h('span', { class: `badge ${r.status === 'succeeded' ? 'settled' : r.status}` }, r.status), ` ${when(r.createdAt)} to `, h('code', { title: r.recipient }, shortHex(r.recipient)), r.transaction ? [' · ', h('code', { title: r.transaction }, shortHex(r.transaction))] : null),
            ),
          ),
      left > 0 ? form : h('p', { class: 'muted' }, 'Nothing left to refund.'),
      feedback,
    );
  };
  return panel;
}
