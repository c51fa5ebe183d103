// One wallet's spend policy, its budget per limit and its approvals (docs/wallets.md, "Spend policies"), read
// and decided with the management credential that owns the wallet. Amounts arrive in atomic units.
import { dataTable, field, h, liveTime, mount, notice } from '../shared/dom.js';
import { duration, expiry, relative, shortHex, tokenAmount, when } from '../shared/format.js';
import { json } from '../shared/http.js';

interface Amount { network: string; asset: string; amount: string }
interface Policy {
  walletId: string;
  limits?: (Amount & { window: string })[];
  maxPerCall?: Amount;
  allowHosts?: string[];
  denyHosts?: string[];
  allowPayTo?: string[];
  denyPayTo?: string[];
  approvalAbove?: Amount;
  approvalTimeoutSeconds: number;
  updatedAt: string | null;
}
interface BudgetLimit extends Amount { window: string; spent: string; reserved: string; remaining: string; nextReleaseAt: string | null }
interface Approval extends Amount { id: string; status: string; payTo: string; method: string; url: string; createdAt: string; expiresAt: string; decidedBy: string | null; decidedAt: string | null; paymentId: string | null; consumedAt: string | null }

/** Decided approvals listed under the pending ones (the API answers the newest 100). */
const RECENT = 10;

const money = (a: Amount, atomic = a.amount) => tokenAmount(atomic, a.network, a.asset);
const list = (items: string[] | undefined, none: string) => (items?.length ? h('ul', {}, items.map((i) => h('li', {}, h('code', {}, i)))) : none);
const request = (a: Approval) => [`${a.method} `, h('code', {}, a.url)];

/** The wallet's panel: loads when first opened, and again after a decision, a saved policy or Refresh. */
export function walletPolicyPanel(wallet: { id: string; name: string }, token: () => string | null, open: boolean): HTMLDetailsElement {
  const api = <T>(method: string, path: string, body?: unknown) => json<{ data: T }>(method, `/v1/wallets/${encodeURIComponent(wallet.id)}${path}`, { token: token(), body }).then((r) => r.data);
  const count = h('span');
  const feedback = h('div'); // the last action's outcome, kept across reloads
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  let loaded = false;

  /** Says how the last action went, and takes the focus there: the button that was pressed is gone. */
  const tell = (kind: 'success' | 'error', text: string) => {
    const said = notice(kind, text);
    said.tabIndex = -1;
    mount(feedback, said);
    said.focus();
  };

  const load = async () => {
    loaded = true;
    try {
      const [policy, budget, pending, all] = await Promise.all([
        api<Policy>('GET', '/policy'),
        api<BudgetLimit[]>('GET', '/budget'),
        api<Approval[]>('GET', '/approvals?status=pending'),
        api<Approval[]>('GET', '/approvals'),
      ]);
      mount(count, pending.length ? h('span', { class: 'badge pending' }, `${pending.length} pending`) : null);
      mount(body, policySection(policy), budgetSection(budget), pendingSection(pending, decide), decidedSection(all.filter((a) => a.status !== 'pending').slice(0, RECENT)), editSection(wallet.name, policy, save));
    } catch (error) {
      mount(body, notice('error', (error as Error).message));
    }
  };

  const decide = async (approval: Approval, action: 'approve' | 'deny', row: HTMLElement) => {
    row.querySelectorAll('button').forEach((b) => (b.disabled = true));
    try {
      const decided = await api<Approval>('POST', `/approvals/${encodeURIComponent(approval.id)}/${action}`);
      tell('success', action === 'approve' ? `Approved ${money(decided)} to ${decided.payTo}: the agent may now repeat its call with approvalId ${decided.id}, once.` : `Denied ${money(decided)} to ${decided.payTo}.`);
    } catch (error) {
      tell('error', (error as Error).message); // e.g. 409: it expired or was decided elsewhere meanwhile
    }
    await load();
  };

  const save = async (text: string, out: HTMLElement) => {
    mount(feedback); // an earlier outcome is not this one's
    let policy: unknown;
    try {
      policy = JSON.parse(text);
    } catch (error) {
      return mount(out, notice('error', `Not JSON: ${(error as Error).message}`));
    }
    try {
      await api<Policy>('PUT', '/policy', policy);
    } catch (error) {
      return mount(out, notice('error', (error as Error).message));
    }
    tell('success', 'Policy saved: it applies from the next call.');
    await load();
  };

  const details: HTMLDetailsElement = h(
    'details',
    { class: 'card wallet', ontoggle: () => void (details.open && !loaded && load()) },
    h('summary', {}, h('h2', {}, wallet.name), count),
    h('div', { class: 'row' }, h('button', { type: 'button', class: 'secondary', 'aria-label': `Refresh ${wallet.name}`, onclick: () => void (mount(feedback), load()) }, 'Refresh')),
    feedback,
    body,
  );
  details.open = open;
  return details;
}

function policySection(policy: Policy): HTMLElement {
  const heading = h('h3', {}, 'Policy');
  if (!policy.updatedAt) return h('section', {}, heading, h('p', {}, 'No policy set: no limits and no approvals; each call is bounded only by its own maxPayment.'));
  return h(
    'section',
    {},
    heading,
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Limits'),
      h('dd', {}, policy.limits?.length ? h('ul', {}, policy.limits.map((l) => h('li', {}, `${l.window}: ${money(l)}`))) : 'None'),
      h('dt', {}, 'Per call at most'),
      h('dd', {}, policy.maxPerCall ? money(policy.maxPerCall) : 'No cap beyond the call’s maxPayment'),
      h('dt', {}, 'Hosts allowed'),
      h('dd', {}, list(policy.allowHosts, 'Any')),
      h('dt', {}, 'Hosts denied'),
      h('dd', {}, list(policy.denyHosts, 'None')),
      h('dt', {}, 'Recipients allowed'),
      h('dd', {}, list(policy.allowPayTo, 'Any')),
      h('dt', {}, 'Recipients denied'),
      h('dd', {}, list(policy.denyPayTo, 'None')),
      h('dt', {}, 'Approval above'),
      h('dd', {}, policy.approvalAbove ? `${money(policy.approvalAbove)} (a request not decided within ${duration(policy.approvalTimeoutSeconds)} expires, as denied)` : 'Never asked'),
      h('dt', {}, 'Changed'),
      h('dd', {}, when(policy.updatedAt)),
    ),
  );
}

function budgetSection(budget: BudgetLimit[]): HTMLElement {
  return h(
    'section',
    {},
    h('h3', {}, 'Budget'),
    budget.length === 0
      ? h('p', {}, 'No limits to count against.')
      : [
          h('p', { class: 'muted' }, 'Spent: settled payments in the window. Reserved: payments signed or about to be, not yet settled.'),
          dataTable(
            ['Window', 'Limit', 'Spent', 'Reserved', 'Remaining', 'Next release'],
            budget.map((b) => ({
              cells: [b.window, money(b), money(b, b.spent), money(b, b.reserved), h('strong', {}, money(b, b.remaining)), b.nextReleaseAt ? `${when(b.nextReleaseAt)} (${relative(b.nextReleaseAt)})` : '—'],
            })),
          ),
        ],
  );
}

function pendingSection(pending: Approval[], decide: (a: Approval, action: 'approve' | 'deny', row: HTMLElement) => Promise<void>): HTMLElement {
  return h(
    'section',
    {},
    h('h3', {}, 'Pending approvals'),
    pending.length === 0
      ? h('p', {}, 'Nothing waits for a decision.')
      : dataTable(
          ['Amount', 'Pay to', 'Request', 'Asked', 'Expires', 'Decision'],
          pending.map((a) => {
            const what = `${money(a)} to ${shortHex(a.payTo)}`;
            const act = (action: 'approve' | 'deny') => (event: Event) => void decide(a, action, (event.currentTarget as HTMLElement).closest('tr')!);
            return {
              attrs: { 'data-approval-id': a.id },
              cells: [
                h('strong', {}, money(a)),
                h('code', {}, a.payTo),
                request(a),
                when(a.createdAt),
                liveTime(a.expiresAt, expiry, when(a.expiresAt)),
                h(
                  'div',
                  { class: 'row' },
                  h('button', { type: 'button', 'aria-label': `Approve ${what}`, onclick: act('approve') }, 'Approve'),
                  h('button', { type: 'button', class: 'danger', 'aria-label': `Deny ${what}`, onclick: act('deny') }, 'Deny'),
                ),
              ],
            };
          }),
        ),
  );
}

function decidedSection(decided: Approval[]): HTMLElement | null {
  if (decided.length === 0) return null;
  return h(
    'section',
    {},
    h('h3', {}, 'Recent decisions'),
    dataTable(
      ['Status', 'Amount', 'Request', 'Decided by', 'Decided', 'Payment'],
      decided.map((a) => ({
        attrs: { 'data-approval-id': a.id },
        cells: [
          h('span', { class: `badge ${a.status}` }, a.status),
          money(a),
          request(a),
          a.decidedBy ? h('code', { title: 'management credential' }, a.decidedBy) : a.status === 'expired' ? 'nobody (expired)' : '—',
          a.decidedAt ? when(a.decidedAt) : a.status === 'expired' ? liveTime(a.expiresAt, expiry, when(a.expiresAt)) : '—',
          a.paymentId ? h('code', {}, a.paymentId) : '—',
        ],
      })),
    ),
  );
}

function editSection(name: string, policy: Policy, save: (text: string, feedback: HTMLElement) => Promise<void>): HTMLElement {
  const { walletId: _wallet, updatedAt: _updated, ...rules } = policy;
  const text = h('textarea', { name: 'policy', spellcheck: 'false', autocomplete: 'off' });
  text.value = JSON.stringify(rules, null, 2);
  const feedback = h('div');
  return h(
    'details',
    {},
    h('summary', {}, 'Edit the policy (JSON)'),
    h(
      'form',
      {
        'aria-label': `Edit the policy of ${name}`,
        onsubmit: async (event: Event) => {
          event.preventDefault();
          const button = (event.currentTarget as HTMLFormElement).querySelector('button')!;
          button.disabled = true;
          mount(feedback);
          await save(text.value, feedback);
          button.disabled = false;
        },
      },
      field(`Policy of ${name}`, text, 'Replaces the whole policy. Every field is optional; {} removes every rule. Amounts in atomic units (1 USDG = 1000000).'),
      h('button', { type: 'submit' }, 'Save policy'),
      feedback,
    ),
  );
}
