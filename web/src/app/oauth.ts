// Connecting applications to a wallet through OAuth (docs/mcp.md#oauth): the consent page an application's
// authorization request lands on (#/authorize, from GET /oauth/authorize), and Connected apps (#/connected-apps),
// where the user's grants are listed with what each has paid, and revoked.
//
// Wallets belong to the management credential (svc_api_…) that made them, so the consent page asks for it (it stays
// in this page's memory for the one request, like the Wallets page's) and lists its wallets; the user picks one and
// a spending ceiling. The server checks everything again when the answer is posted.
import { dataTable, field, h, mount, notice } from '../shared/dom.js';
import { shortHex, tokenAmount, when } from '../shared/format.js';
import { json } from '../shared/http.js';
import { session } from './session.js';

interface Consent {
  client: { id: string; name: string; uri: string | null };
  redirectUri: string;
  redirectHost: string;
  loopback: boolean;
  scope: string;
  resource: string;
  asset: { network: string; asset: string; symbol: string; decimals: number };
}
interface Wallet { id: string; name: string; externalId: string; address: string | null; status: string }
interface Ceiling { network: string; asset: string; amount: string; spent: string; reserved: string; remaining: string }
interface Grant {
  id: string;
  status: 'active' | 'revoked';
  revokedReason: string | null;
  client: { id: string; name: string; uri: string | null; redirectHosts: string[] };
  wallet: { id: string; name: string; address: string | null };
  ceiling: Ceiling;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** The OAuth parameters the consent route takes back (the rest of the query is not the application's request). */
const PARAMS = ['response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'scope', 'resource', 'state'];

const api = <T>(method: string, path: string, body?: unknown) => json<{ data: T }>(method, path, { token: session.token, body }).then((r) => r.data);

/** A decimal amount as typed ("5", "0.25") to atomic units of `decimals` places; null when it is not a positive amount. */
export function atomicOf(text: string, decimals: number): string | null {
  const match = new RegExp(`^(\\d{1,15})(?:\\.(\\d{1,${decimals}}))?$`).exec(text.trim());
  if (!match) return null;
  const atomic = BigInt(match[1]!) * 10n ** BigInt(decimals) + BigInt((match[2] ?? '').padEnd(decimals, '0') || '0');
  return atomic > 0n ? atomic.toString() : null;
}

export async function authorizePage(root: HTMLElement, query: URLSearchParams): Promise<void> {
  const request = Object.fromEntries(PARAMS.flatMap((name) => (query.has(name) ? [[name, query.get(name)!]] : [])));
  let consent: Consent;
  try {
    consent = await api<Consent>('GET', `/v1/oauth/consent?${new URLSearchParams(request)}`);
  } catch (error) {
    if ((error as { status?: number }).status === 401) throw error; // the identity token: main.ts signs in again
    mount(root, h('h1', {}, 'Connect an application'), notice('error', 'This connection request cannot be answered: ', (error as Error).message), h('p', {}, 'Nothing was granted. Go back to the application and connect it again.'));
    return;
  }
  const { asset } = consent;
  const feedback = h('div');
  const walletList = h('div');
  let managementCredential = '';
  let wallets: Wallet[] = [];

  const credential = h('input', { name: 'managementCredential', type: 'password', autocomplete: 'off', placeholder: 'svc_api_…' });
  const ceiling = h('input', { name: 'ceiling', required: true, inputmode: 'decimal', autocomplete: 'off', placeholder: '5.00' });
  const allow = h('button', { type: 'submit', disabled: true }, 'Allow');
  const deny = h('button', { type: 'button', class: 'secondary' }, 'Deny');

  const showWallets = async () => {
    mount(feedback);
    managementCredential = credential.value.trim();
    try {
      wallets = (await json<{ data: Wallet[] }>('GET', '/v1/wallets', { token: managementCredential })).data;
    } catch (error) {
      managementCredential = '';
      allow.disabled = true;
      mount(walletList, notice('error', (error as Error).message));
      return;
    }
    const active = wallets.filter((w) => w.status === 'active');
    allow.disabled = active.length === 0;
    mount(
      walletList,
      active.length === 0
        ? h('p', {}, 'This credential has no active wallet to connect.')
        : h(
            'fieldset',
            { class: 'wallet-choice' },
            h('legend', {}, 'Wallet to connect'),
            active.map((w, i) =>
              h(
                'div',
                { class: 'field' },
                h('label', {}, h('input', { type: 'radio', name: 'walletId', value: w.id, required: true, checked: i === 0 }), ' ', h('strong', {}, w.name), w.address ? h('code', {}, ` ${shortHex(w.address)}`) : null),
              ),
            ),
          ),
    );
  };

  const answer = async (decision: 'approve' | 'deny') => {
    mount(feedback);
    const body: Record<string, unknown> = { request, decision };
    if (decision === 'approve') {
      const walletId = (root.querySelector('input[name=walletId]:checked') as HTMLInputElement | null)?.value;
      const atomic = atomicOf(ceiling.value, asset.decimals);
      if (!managementCredential || !walletId) return mount(feedback, notice('error', 'Show the wallets of your management credential and pick one.'));
      if (!atomic) return mount(feedback, notice('error', `The ceiling must be an amount of ${asset.symbol} above zero, with at most ${asset.decimals} decimals.`));
      Object.assign(body, { walletId, managementCredential, ceiling: atomic });
    }
    allow.disabled = deny.disabled = true;
    try {
      const { redirectTo } = await api<{ redirectTo: string }>('POST', '/v1/oauth/consent', body);
      mount(feedback, notice('success', decision === 'approve' ? `Connected. Returning you to ${consent.client.name}…` : `Denied. Returning you to ${consent.client.name}…`));
      location.assign(redirectTo);
    } catch (error) {
      allow.disabled = deny.disabled = false;
      const signIn = (error as { status?: number }).status === 401 ? 'Your sign-in has expired: reload this page to sign in again. ' : '';
      mount(feedback, notice('error', signIn, (error as Error).message));
    }
  };
  deny.addEventListener('click', () => void answer('deny'));

  mount(
    root,
    h('h1', {}, 'Connect an application'),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'asker' },
      h('h2', { id: 'asker' }, `${consent.client.name} asks to pay from one of your wallets`),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Answer goes to'),
        h('dd', {}, h('strong', { 'data-testid': 'redirect-host' }, consent.redirectHost), h('br'), h('small', {}, h('code', {}, consent.redirectUri))),
        consent.client.uri ? [h('dt', {}, 'Application site'), h('dd', {}, h('code', {}, consent.client.uri))] : null,
        h('dt', {}, 'It may'),
        h('dd', {}, 'use the wallet’s MCP tools (read it and its payments, pay x402 resources) within the wallet’s spend policy and the ceiling you set here, until you revoke it under Connected apps.'),
      ),
      consent.loopback
        ? notice('info', 'The answer goes to a program on this computer (', consent.redirectHost, '). Any program here can ask in any name: allow only a connection you just started yourself.')
        : null,
      h('p', { class: 'muted' }, 'Anyone can register an application under any name: check where the answer goes.'),
    ),
    h(
      'form',
      {
        class: 'card',
        'aria-label': `Connect ${consent.client.name}`,
        onsubmit: (event: Event) => {
          event.preventDefault();
          void answer('approve');
        },
      },
      h(
        'div',
        { class: 'row' },
        field('Management credential', credential, 'Wallets belong to the management credential (svc_api_…) that made them. It is sent once, with your answer, and not kept.'),
        h('button', { type: 'button', class: 'secondary', onclick: () => void showWallets() }, 'Show wallets'),
      ),
      walletList,
      field(`Spending ceiling (${asset.symbol})`, ceiling, `What ${consent.client.name} may pay in all through this connection; the wallet’s own spend policy applies too.`),
      h('div', { class: 'row' }, allow, deny),
      feedback,
    ),
  );
  credential.focus();
}

export async function connectedAppsPage(root: HTMLElement): Promise<void> {
  const grants = await api<Grant[]>('GET', '/v1/oauth/grants');
  const feedback = h('div');
  const revoke = async (grant: Grant, button: HTMLButtonElement) => {
    button.disabled = true;
    try {
      await api<Grant>('DELETE', `/v1/oauth/grants/${encodeURIComponent(grant.id)}`);
      await connectedAppsPage(root);
      root.querySelector('[data-slot=feedback]')?.replaceChildren(notice('success', `${grant.client.name} is disconnected: its tokens are refused from now on.`));
    } catch (error) {
      button.disabled = false;
      mount(feedback, notice('error', (error as Error).message));
    }
  };
  const reason: Record<string, string> = {
    user: 'revoked',
    code_reused: 'revoked: its code was used twice',
    refresh_token_reused: 'revoked: a used refresh token came back',
    wallet_credential_revoked: 'revoked: the wallet’s credential was revoked',
  };
  mount(
    root,
    h('h1', {}, 'Connected apps'),
    h('p', {}, 'Applications you connected to a wallet through OAuth (Claude, ChatGPT, mcp-remote, …). Each pays from that wallet up to the ceiling you set; revoking one stops it at once.'),
    h('div', { 'data-slot': 'feedback' }, feedback),
    grants.length === 0
      ? h('p', { class: 'muted' }, 'No application is connected yet. An application connects by sending you to this dashboard from its own sign-in button.')
      : dataTable(
          ['Application', 'Wallet', 'Ceiling', 'Paid', 'Remaining', 'Connected', 'Last used', 'Status', 'Action'],
          grants.map((g) => {
            const amount = (atomic: string) => tokenAmount(atomic, g.ceiling.network, g.ceiling.asset);
            const button: HTMLButtonElement = h('button', { type: 'button', class: 'secondary', 'aria-label': `Revoke ${g.client.name}` }, 'Revoke');
            button.addEventListener('click', () => void revoke(g, button));
            const paid = BigInt(g.ceiling.spent) + BigInt(g.ceiling.reserved);
            return {
              attrs: { 'data-grant-id': g.id },
              cells: [
                [h('strong', {}, g.client.name), h('br'), h('small', {}, g.client.redirectHosts.join(', '))],
                [g.wallet.name, g.wallet.address ? h('br') : null, g.wallet.address ? h('code', {}, shortHex(g.wallet.address)) : null],
                amount(g.ceiling.amount),
                [amount(paid.toString()), g.ceiling.reserved !== '0' ? h('small', {}, ` (${amount(g.ceiling.reserved)} not final yet)`) : null],
                amount(g.ceiling.remaining),
                when(g.createdAt),
                when(g.lastUsedAt),
                h('span', { class: `badge ${g.status}`, title: g.revokedReason ? reason[g.revokedReason] ?? g.revokedReason : null }, g.status === 'revoked' && g.revokedReason ? reason[g.revokedReason] ?? 'revoked' : g.status),
                g.status === 'active' ? button : null,
              ],
            };
          }),
          'Your connected applications',
        ),
  );
}
