// The user's hosted agents and their credits balance.
import { h, mount } from '../shared/dom.js';
import { usd, when } from '../shared/format.js';
import { json } from '../shared/http.js';
import { session } from './session.js';

interface Agent { id: string; name: string; type: string; status: string; lastError: string | null; createdAt: string; runtimeInstance: { expiresAt?: string } | null }

export async function agentsPage(root: HTMLElement): Promise<void> {
  const [agents, credits] = await Promise.all([
    json<{ data: Agent[] }>('GET', '/agents', { token: session.token }).then((r) => r.data),
    json<{ data: { balanceUsdCents: number } }>('GET', '/credits', { token: session.token }).then((r) => r.data),
  ]);
  mount(
    root,
    h('h1', {}, 'Agents and credits'),
    h('section', { class: 'card', 'aria-labelledby': 'credits' }, h('h2', { id: 'credits' }, 'Credits'), h('p', { class: 'balance' }, usd(credits.balanceUsdCents)), h('p', { class: 'muted' }, 'Top up with any x402 client: POST /credits/top-up.')),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'agents' },
      h('h2', { id: 'agents' }, 'Agents'),
      agents.length === 0
        ? h('p', {}, 'No agents yet. POST /agents launches one for 10 USD of credits a month.')
        : h(
            'table',
            {},
            h('thead', {}, h('tr', {}, ['Name', 'Type', 'Status', 'Runs until', 'Last error', 'Created'].map((t) => h('th', { scope: 'col' }, t)))),
            h('tbody', {}, agents.map((a) => h('tr', {}, h('td', {}, a.name), h('td', {}, a.type), h('td', {}, h('span', { class: `badge ${a.status}` }, a.status)), h('td', {}, when(a.runtimeInstance?.expiresAt ?? null)), h('td', {}, a.lastError ?? '—'), h('td', {}, when(a.createdAt))))),
          ),
    ),
  );
}
