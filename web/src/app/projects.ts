// Projects, their API keys (created and shown once, revoked), merchants (created, renamed, disabled), payment
// intents (listed, and created with a project API key) and event queues.
import { copyButton, dataTable, field, h, liveTime, mount, notice } from '../shared/dom.js';
import { expiry, shortHex, usd, usdCents, when } from '../shared/format.js';
import { HttpError, json } from '../shared/http.js';
import { refundsPanel, refundWalletForm } from './refunds.js';
import { shownOnce } from './secret.js';
import { session } from './session.js';

interface ApiKey { id: string; name: string; prefix: string; status: string; lastUsedAt: string | null; createdAt: string }
interface Merchant { id: string; name: string; enabled: boolean; payTo: string; network: string; createdAt: string }
interface Project { id: string; name: string; status: string; intentEventsQueueId?: string | null; refundWalletId?: string | null; createdAt: string; apiKeys: ApiKey[]; merchants: Merchant[] }
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
interface Queue { id: string; name: string; depth?: Record<string, number> }

const INTENT_STATUSES = ['pending', 'settling', 'settled', 'failed', 'expired'];
const api = <T>(method: string, path: string, body?: unknown) => json<{ data: T }>(method, path, { token: session.token, body }).then((r) => r.data);

/**
 * Project API keys this tab was shown (a project's first key, a key made here) or was given to create intents,
 * by project id: in memory only, like the Wallets page's management credential, and forgotten on sign-out.
 * Intents are created with a project API key (the API's rule), never with the user's identity token.
 */
const projectKeys = new Map<string, string>();

export function forgetProjectKeys(): void {
  projectKeys.clear();
}

/** A form whose submit runs `action`, showing its error (in the server's words) under it. */
function actionForm(title: string, fields: HTMLElement[], submit: string, action: (form: HTMLFormElement) => Promise<void>): HTMLFormElement {
  const feedback = h('div');
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'inline',
      'aria-label': title,
      onsubmit: async (event: Event) => {
        event.preventDefault();
        mount(feedback);
        const button = form.querySelector<HTMLButtonElement>('button[type=submit]')!;
        button.disabled = true;
        try {
          await action(form);
        } catch (error) {
          mount(feedback, notice('error', (error as Error).message));
        } finally {
          button.disabled = false;
        }
      },
    },
    fields,
    h('button', { type: 'submit' }, submit),
    feedback,
  );
  return form;
}

export async function projectsPage(root: HTMLElement): Promise<void> {
  const projects = await api<Project[]>('GET', '/v1/projects');
  const created = h('div');
  const name = h('input', { name: 'name', required: true, maxlength: 200 });
  mount(
    root,
    h('h1', {}, 'Projects'),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'new-project' },
      h('h2', { id: 'new-project' }, 'New project'),
      actionForm('New project', [field('Project name', name)], 'Create project', async () => {
        const made = await api<{ project: Project; apiKey: ApiKey & { secret: string } }>('POST', '/v1/projects', { name: name.value.trim() });
        projectKeys.set(made.project.id, made.apiKey.secret);
        await projectsPage(root);
        root.querySelector('[data-slot=created]')!.replaceChildren(
          shownOnce(`API key of ${made.project.name}`, made.apiKey.secret),
          h('p', {}, h('a', { href: `#/projects/${made.project.id}` }, `Open ${made.project.name}`)),
        );
      }),
      h('div', { 'data-slot': 'created' }, created),
    ),
    projects.length === 0
      ? h('p', {}, 'No projects yet.')
      : dataTable(
          ['Name', 'Status', 'API keys', 'Merchants', 'Created'],
          projects.map((p) => ({
            cells: [h('a', { href: `#/projects/${p.id}` }, p.name), h('span', { class: `badge ${p.status}` }, p.status), p.apiKeys.filter((k) => k.status === 'active').length, p.merchants.length, when(p.createdAt)],
          })),
          'Your projects',
        ),
  );
}

export async function projectPage(root: HTMLElement, projectId: string, query: URLSearchParams): Promise<void> {
  const project = (await api<Project[]>('GET', '/v1/projects')).find((p) => p.id === projectId);
  if (!project) {
    mount(root, h('h1', {}, 'Project not found'), h('p', {}, h('a', { href: '#/projects' }, 'Back to your projects')));
    return;
  }
  const reload = () => projectPage(root, projectId, query);
  const intents = h('section', { class: 'card', 'aria-labelledby': 'intents' });
  const showIntents = () => intentsSection(intents, project, query);
  await showIntents();
  mount(
    root,
    h('p', {}, h('a', { href: '#/projects' }, '← Projects')),
    h('h1', {}, project.name),
    keysSection(project, reload),
    merchantsSection(project, reload),
    newIntentSection(project, showIntents),
    intents,
    h('section', { class: 'card', 'aria-labelledby': 'refunds' }, h('h2', { id: 'refunds' }, 'Refunds'), h('p', {}, 'Refunds are paid back to the payer from a Tollgate wallet of yours; refund an intent from its row above.'), refundWalletForm(project)),
    await queuesSection(project, reload),
  );
}

function keysSection(project: Project, reload: () => Promise<void>): HTMLElement {
  const slot = h('div');
  const name = h('input', { name: 'keyName', required: true, maxlength: 100 });
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'keys' },
    h('h2', { id: 'keys' }, 'API keys'),
    dataTable(
      ['Name', 'Prefix', 'Status', 'Last used', 'Created', 'Action'],
      project.apiKeys.map((key) => ({
        cells: [
          key.name,
          h('code', {}, key.prefix),
          h('span', { class: `badge ${key.status}` }, key.status),
          when(key.lastUsedAt),
          when(key.createdAt),
          key.status === 'revoked'
            ? '—'
            : h(
                'button',
                {
                  type: 'button',
                  class: 'danger',
                  'aria-label': `Revoke key ${key.name}`,
                  onclick: async () => {
                    if (!confirm(`Revoke the key "${key.name}"? Requests using it will be refused at once.`)) return;
                    await api('DELETE', `/v1/projects/${project.id}/api-keys/${key.id}`);
                    if (projectKeys.get(project.id)?.startsWith(key.prefix)) projectKeys.delete(project.id);
                    await reload();
                  },
                },
                'Revoke',
              ),
        ],
      })),
    ),
    h('h3', {}, 'New API key'),
    actionForm('New API key', [field('Key name', name)], 'Create key', async () => {
      const key = await api<ApiKey & { secret: string }>('POST', `/v1/projects/${project.id}/api-keys`, { name: name.value.trim() });
      projectKeys.set(project.id, key.secret);
      await reload();
      document.querySelector('[data-slot=new-key]')?.replaceChildren(shownOnce(`API key ${key.name}`, key.secret));
    }),
    h('div', { 'data-slot': 'new-key' }, slot),
  );
}

function merchantsSection(project: Project, reload: () => Promise<void>): HTMLElement {
  const name = h('input', { name: 'merchantName', required: true, maxlength: 200 });
  const payTo = h('input', { name: 'payTo', required: true, pattern: '0x[0-9a-fA-F]{40}', spellcheck: 'false', autocomplete: 'off', size: 44 });
  const feedback = h('div');
  /** PATCH the merchant (the owner's route); its refusal (e.g. 409: the name is taken) is said above the table. */
  const change = async (merchant: Merchant, patch: { name?: string; enabled?: boolean }): Promise<boolean> => {
    mount(feedback);
    try {
      await api<Merchant>('PATCH', `/v1/projects/${project.id}/merchants/${merchant.id}`, patch);
    } catch (error) {
      mount(feedback, notice('error', (error as Error).message));
      return false;
    }
    await reload();
    return true;
  };
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'merchants' },
    h('h2', { id: 'merchants' }, 'Merchants'),
    feedback,
    project.merchants.length === 0
      ? h('p', {}, 'No merchants yet: a merchant is who an intent pays.')
      : dataTable(
          ['Name', 'Pays to', 'Network', 'Status', 'Id', 'Actions'],
          project.merchants.map((m) => {
            const nameCell = h('span', {}, m.name);
            return {
              attrs: { 'data-merchant-id': m.id },
              cells: [
                nameCell,
                h('code', { title: m.payTo }, shortHex(m.payTo)),
                m.network,
                h('span', { class: `badge ${m.enabled ? 'active' : 'disabled'}` }, m.enabled ? 'enabled' : 'disabled'),
                h('code', {}, m.id),
                h(
                  'div',
                  { class: 'row' },
                  h('button', { type: 'button', class: 'secondary', 'aria-label': `Rename merchant ${m.name}`, onclick: () => renameForm(nameCell, m, change) }, 'Rename'),
                  m.enabled
                    ? h(
                        'button',
                        {
                          type: 'button',
                          class: 'danger',
                          'aria-label': `Disable merchant ${m.name}`,
                          onclick: () => void (confirm(`Disable "${m.name}"? Its new and pending intents cannot be paid until you enable it again.`) && change(m, { enabled: false })),
                        },
                        'Disable',
                      )
                    : h('button', { type: 'button', class: 'secondary', 'aria-label': `Enable merchant ${m.name}`, onclick: () => void change(m, { enabled: true }) }, 'Enable'),
                ),
              ],
            };
          }),
        ),
    h('h3', {}, 'New merchant'),
    actionForm('New merchant', [field('Merchant name', name), field('Pay to (EVM address)', payTo, 'Where its intents are paid; a mixed-case address must carry a valid EIP-55 checksum.')], 'Create merchant', async () => {
      await api('POST', `/v1/projects/${project.id}/merchants`, { name: name.value.trim(), payTo: payTo.value.trim() });
      await reload();
    }),
  );
}

/** Turns a merchant's name cell into a form for its new name; Cancel (or Escape) puts the name back. */
function renameForm(cell: HTMLElement, merchant: Merchant, change: (m: Merchant, patch: { name: string }) => Promise<boolean>): void {
  const input = h('input', { name: 'merchantNewName', required: true, maxlength: 200, value: merchant.name });
  const cancel = () => mount(cell, merchant.name);
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'inline',
      'aria-label': `Rename merchant ${merchant.name}`,
      onkeydown: (event: Event) => void ((event as KeyboardEvent).key === 'Escape' && cancel()),
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const next = input.value.trim();
        if (next === merchant.name) return cancel();
        form.querySelectorAll('button').forEach((b) => (b.disabled = true));
        if (!(await change(merchant, { name: next }))) form.querySelectorAll('button').forEach((b) => (b.disabled = false));
      },
    },
    field(`New name of ${merchant.name}`, input),
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Save'), h('button', { type: 'button', class: 'secondary', onclick: cancel }, 'Cancel')),
  );
  mount(cell, form);
  input.select();
}

/**
 * A payment intent made from the dashboard: the same POST /v1/payment-intents a merchant's server makes, with the
 * project's API key (from this tab's memory, or typed here and then kept in it). Its pay URL is shown to copy.
 */
function newIntentSection(project: Project, showIntents: () => Promise<void>): HTMLElement {
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

async function intentsSection(section: HTMLElement, project: Project, query: URLSearchParams): Promise<void> {
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

async function queuesSection(project: Project, reload: () => Promise<void>): Promise<HTMLElement> {
  const queues = await api<Queue[]>('GET', `/v1/projects/${project.id}/event-queues`);
  const states = [...new Set(queues.flatMap((q) => Object.keys(q.depth ?? {})))];
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'queues' },
    h('h2', { id: 'queues' }, 'Event queues'),
    queues.length === 0
      ? h('p', {}, 'No event queues yet.')
      : [
          dataTable(
            ['Queue', ...states],
            queues.map((q) => ({ cells: [q.name, ...states.map((s) => String((q.depth?.[s] as unknown) ?? '—'))] })),
          ),
          intentEventsForm(project, queues),
        ],
    newQueueForm(project, queues.length === 0, reload),
  );
}

/**
 * A new event queue, made as a merchant's server makes one: POST /v1/event-queues with the project's API key (from
 * this tab's memory, or typed here). The first queue of a project is named to receive its payment-intent events.
 */
function newQueueForm(project: Project, first: boolean, reload: () => Promise<void>): HTMLElement {
  const held = projectKeys.get(project.id);
  const name = h('input', { name: 'queueName', required: true, maxlength: 100, autocomplete: 'off', value: first ? 'intent-events' : '' });
  const key = h('input', { name: 'queueProjectApiKey', type: 'password', required: !held, autocomplete: 'off', placeholder: held ? 'kept in this tab' : 'svc_api_…' });
  return h(
    'div',
    {},
    h('h3', {}, 'New queue'),
    actionForm('New event queue', [field('Queue name', name), field('Key that creates the queue', key, held ? 'Leave empty to use the API key this tab holds for this project.' : 'Queues are made with one of this project’s API keys (svc_api_…). Kept in this tab only.')], 'Create queue', async () => {
      const secret = key.value.trim() || projectKeys.get(project.id);
      if (!secret) throw new Error('Project API key: required');
      const made = await json<{ data: Queue }>('POST', '/v1/event-queues', { token: secret, body: { name: name.value.trim() } });
      projectKeys.set(project.id, secret);
      if (first) await api<Project>('PATCH', `/v1/projects/${project.id}`, { intentEventsQueueId: made.data.id });
      await reload();
    }),
  );
}

/** Which queue receives the project's payment_intent.* events (PATCH /v1/projects/{id}; docs/intents.md). */
function intentEventsForm(project: Project, queues: Queue[]): HTMLElement {
  const feedback = h('div');
  const select: HTMLSelectElement = h(
    'select',
    {
      name: 'intentEventsQueue',
      onchange: async () => {
        mount(feedback);
        select.disabled = true;
        try {
          const changed = await api<Project>('PATCH', `/v1/projects/${project.id}`, { intentEventsQueueId: select.value || null });
          project.intentEventsQueueId = changed.intentEventsQueueId;
          const name = queues.find((q) => q.id === changed.intentEventsQueueId)?.name;
          mount(feedback, notice('success', name ? `Payment-intent events now go to ${name}.` : 'Payment-intent events go to no queue.'));
        } catch (error) {
          select.value = project.intentEventsQueueId ?? '';
          mount(feedback, notice('error', (error as Error).message));
        } finally {
          select.disabled = false;
        }
      },
    },
    h('option', { value: '' }, 'None'),
    queues.map((q) => h('option', { value: q.id, selected: q.id === project.intentEventsQueueId }, q.name)),
  );
  return h('div', { class: 'pager' }, field('Payment-intent events go to', select, 'Each settled, failed or expired intent of this project publishes one event there; consume it with the claim and ack API.'), feedback);
}
