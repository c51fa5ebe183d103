// Projects, their API keys (created and shown once, revoked), merchants, intents and event queues.
import { field, h, mount, notice } from '../shared/dom.js';
import { shortHex, usd, when } from '../shared/format.js';
import { json } from '../shared/http.js';
import { shownOnce } from './secret.js';
import { session } from './session.js';

interface ApiKey { id: string; name: string; prefix: string; status: string; lastUsedAt: string | null; createdAt: string }
interface Merchant { id: string; name: string; enabled: boolean; payTo: string; network: string; createdAt: string }
interface Project { id: string; name: string; status: string; createdAt: string; apiKeys: ApiKey[]; merchants: Merchant[] }
interface Intent { id: string; merchantId: string; externalId: string; status: string; amountUsdCents: number; paymentUrl: string; createdAt: string; transactionHash: string | null }
interface Queue { id: string; name: string; depth?: Record<string, number> }

const INTENT_STATUSES = ['pending', 'settling', 'settled', 'failed', 'expired'];
const api = <T>(method: string, path: string, body?: unknown) => json<{ data: T }>(method, path, { token: session.token, body }).then((r) => r.data);

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
        const button = form.querySelector('button')!;
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
      : h(
          'table',
          {},
          h('caption', {}, 'Your projects'),
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'API keys'), h('th', { scope: 'col' }, 'Merchants'), h('th', { scope: 'col' }, 'Created'))),
          h(
            'tbody',
            {},
            projects.map((p) =>
              h('tr', {}, h('td', {}, h('a', { href: `#/projects/${p.id}` }, p.name)), h('td', {}, h('span', { class: `badge ${p.status}` }, p.status)), h('td', {}, p.apiKeys.filter((k) => k.status === 'active').length), h('td', {}, p.merchants.length), h('td', {}, when(p.createdAt))),
            ),
          ),
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
  mount(
    root,
    h('p', {}, h('a', { href: '#/projects' }, '← Projects')),
    h('h1', {}, project.name),
    keysSection(project, reload),
    merchantsSection(project, reload),
    await intentsSection(project, query),
    await queuesSection(project),
  );
}

function keysSection(project: Project, reload: () => Promise<void>): HTMLElement {
  const slot = h('div');
  const name = h('input', { name: 'keyName', required: true, maxlength: 100 });
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'keys' },
    h('h2', { id: 'keys' }, 'API keys'),
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, ['Name', 'Prefix', 'Status', 'Last used', 'Created', ''].map((t) => h('th', { scope: 'col' }, t)))),
      h(
        'tbody',
        {},
        project.apiKeys.map((key) =>
          h(
            'tr',
            {},
            h('td', {}, key.name),
            h('td', {}, h('code', {}, key.prefix)),
            h('td', {}, h('span', { class: `badge ${key.status}` }, key.status)),
            h('td', {}, when(key.lastUsedAt)),
            h('td', {}, when(key.createdAt)),
            h(
              'td',
              {},
              key.status === 'revoked'
                ? null
                : h(
                    'button',
                    {
                      type: 'button',
                      class: 'danger',
                      'aria-label': `Revoke key ${key.name}`,
                      onclick: async () => {
                        if (!confirm(`Revoke the key "${key.name}"? Requests using it will be refused at once.`)) return;
                        await api('DELETE', `/v1/projects/${project.id}/api-keys/${key.id}`);
                        await reload();
                      },
                    },
                    'Revoke',
                  ),
            ),
          ),
        ),
      ),
    ),
    h('h3', {}, 'New API key'),
    actionForm('New API key', [field('Key name', name)], 'Create key', async () => {
      const key = await api<ApiKey & { secret: string }>('POST', `/v1/projects/${project.id}/api-keys`, { name: name.value.trim() });
      await reload();
      document.querySelector('[data-slot=new-key]')?.replaceChildren(shownOnce(`API key ${key.name}`, key.secret));
    }),
    h('div', { 'data-slot': 'new-key' }, slot),
  );
}

function merchantsSection(project: Project, reload: () => Promise<void>): HTMLElement {
  const name = h('input', { name: 'merchantName', required: true, maxlength: 200 });
  const payTo = h('input', { name: 'payTo', required: true, pattern: '0x[0-9a-fA-F]{40}', spellcheck: 'false', autocomplete: 'off', size: 44 });
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'merchants' },
    h('h2', { id: 'merchants' }, 'Merchants'),
    project.merchants.length === 0
      ? h('p', {}, 'No merchants yet: a merchant is who an intent pays.')
      : h(
          'table',
          {},
          h('thead', {}, h('tr', {}, ['Name', 'Pays to', 'Network', 'Enabled', 'Id'].map((t) => h('th', { scope: 'col' }, t)))),
          h('tbody', {}, project.merchants.map((m) => h('tr', {}, h('td', {}, m.name), h('td', {}, h('code', { title: m.payTo }, shortHex(m.payTo))), h('td', {}, m.network), h('td', {}, m.enabled ? 'yes' : 'no'), h('td', {}, h('code', {}, m.id))))),
        ),
    h('h3', {}, 'New merchant'),
    actionForm('New merchant', [field('Merchant name', name), field('Pay to (EVM address)', payTo, 'Where its intents are paid; a mixed-case address must carry a valid EIP-55 checksum.')], 'Create merchant', async () => {
      await api('POST', `/v1/projects/${project.id}/merchants`, { name: name.value.trim(), payTo: payTo.value.trim() });
      await reload();
    }),
  );
}

async function intentsSection(project: Project, query: URLSearchParams): Promise<HTMLElement> {
  const merchantId = query.get('merchant') ?? '';
  const status = query.get('status') ?? '';
  const before = query.get('before') ?? '';
  const params = new URLSearchParams({ limit: '20', ...(merchantId ? { merchantId } : {}), ...(status ? { status } : {}), ...(before ? { before } : {}) });
  const intents = await api<Intent[]>('GET', `/v1/projects/${project.id}/payment-intents?${params}`);
  const merchantName = new Map(project.merchants.map((m) => [m.id, m.name]));
  const go = (changes: Record<string, string>) => {
    const next = new URLSearchParams({ ...(merchantId ? { merchant: merchantId } : {}), ...(status ? { status } : {}), ...changes });
    for (const [k, v] of [...next]) if (!v) next.delete(k);
    location.hash = `#/projects/${project.id}?${next}`;
  };
  const merchantSelect = h('select', { name: 'merchant', onchange: (e: Event) => go({ merchant: (e.target as HTMLSelectElement).value, before: '' }) }, h('option', { value: '' }, 'All merchants'), project.merchants.map((m) => h('option', { value: m.id, selected: m.id === merchantId }, m.name)));
  const statusSelect = h('select', { name: 'status', onchange: (e: Event) => go({ status: (e.target as HTMLSelectElement).value, before: '' }) }, h('option', { value: '' }, 'Any status'), INTENT_STATUSES.map((s) => h('option', { value: s, selected: s === status }, s)));
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'intents' },
    h('h2', { id: 'intents' }, 'Payment intents'),
    h('div', { class: 'inline row' }, field('Merchant', merchantSelect), field('Status', statusSelect)),
    intents.length === 0
      ? h('p', {}, 'No intents match.')
      : h(
          'table',
          {},
          h('thead', {}, h('tr', {}, ['Created', 'Merchant', 'External id', 'Amount', 'Status', 'Transaction', ''].map((t) => h('th', { scope: 'col' }, t)))),
          h(
            'tbody',
            {},
            intents.map((i) =>
              h(
                'tr',
                {},
                h('td', {}, when(i.createdAt)),
                h('td', {}, merchantName.get(i.merchantId) ?? i.merchantId),
                h('td', {}, i.externalId),
                h('td', {}, usd(i.amountUsdCents)),
                h('td', {}, h('span', { class: `badge ${i.status}` }, i.status)),
                h('td', {}, i.transactionHash ? h('code', { title: i.transactionHash }, shortHex(i.transactionHash)) : '—'),
                h('td', {}, h('a', { href: i.paymentUrl, target: '_blank', rel: 'noopener' }, 'Checkout page')),
              ),
            ),
          ),
        ),
    intents.length === 20 ? h('button', { type: 'button', class: 'secondary', onclick: () => go({ before: intents.at(-1)!.id }) }, 'Older intents') : null,
    before ? h('button', { type: 'button', class: 'secondary', onclick: () => go({ before: '' }) }, 'Newest') : null,
  );
}

async function queuesSection(project: Project): Promise<HTMLElement> {
  const queues = await api<Queue[]>('GET', `/v1/projects/${project.id}/event-queues`);
  const states = [...new Set(queues.flatMap((q) => Object.keys(q.depth ?? {})))];
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'queues' },
    h('h2', { id: 'queues' }, 'Event queues'),
    queues.length === 0
      ? h('p', {}, 'No event queues. Create them with this project’s API key (POST /v1/event-queues).')
      : h(
          'table',
          {},
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Queue'), states.map((s) => h('th', { scope: 'col' }, s)))),
          h('tbody', {}, queues.map((q) => h('tr', {}, h('td', {}, q.name), states.map((s) => h('td', {}, String((q.depth?.[s] as unknown) ?? '—')))))),
        ),
  );
}
