// Wallets of the Wallet API. They belong to a management credential (svc_api_…), which the operator
// issues; the user enters it here to list its wallets, each with its USDG balance read from the chain. It
// stays in this tab's memory only.
import { dataTable, field, h, mount, notice } from '../shared/dom.js';
import { symbolAmount, when } from '../shared/format.js';
import { json } from '../shared/http.js';
import { walletPolicyPanel } from './wallet-policy.js';

interface Wallet { id: string; externalId: string; name: string; address: string | null; status: string; provider: string; createdAt: string }
interface Balance { network: string; asset: string; symbol: string; decimals: number; amount: string }

let credential: string | null = null;

/** Up to this many wallets, every panel opens (and loads) at once; past it each loads when opened. */
const OPEN_PANELS = 10;

/** Signing out (or a 401) forgets the credential too: the next user of this tab must not see its wallets. */
export function forgetCredential(): void {
  credential = null;
}

export async function walletsPage(root: HTMLElement): Promise<void> {
  const list = h('div');
  const input = h('input', { name: 'credential', type: 'password', required: true, autocomplete: 'off', placeholder: 'svc_api_…' });
  const show = async () => {
    const wallets = (await json<{ data: Wallet[] }>('GET', '/v1/wallets', { token: credential })).data;
    mount(
      list,
      wallets.length === 0
        ? h('p', {}, 'This credential has no wallets yet.')
        : [
            dataTable(
              ['Name', 'External id', 'Address', 'USDG balance', 'Status', 'Key provider', 'Created'],
              wallets.map((w) => ({
                attrs: { 'data-wallet-id': w.id },
                cells: [w.name, w.externalId, w.address ? h('code', {}, w.address) : '—', w.address ? balanceOf(w) : '—', h('span', { class: `badge ${w.status}` }, w.status), w.provider, when(w.createdAt)],
              })),
              'Wallets of this credential',
            ),
            ...wallets.map((w) => walletPolicyPanel(w, () => credential, wallets.length <= OPEN_PANELS)),
          ],
    );
  };
  /** A refused credential (mistyped, or revoked since) is forgotten and said: no reason to end the user's session. */
  const showOrSay = async () => {
    try {
      await show();
    } catch (error) {
      credential = null;
      mount(list, notice('error', (error as Error).message));
    }
  };
  mount(
    root,
    h('h1', {}, 'Wallets'),
    h(
      'form',
      {
        class: 'card inline',
        'aria-label': 'Wallets of a management credential',
        onsubmit: async (event: Event) => {
          event.preventDefault();
          credential = input.value.trim();
          await showOrSay();
        },
      },
      field('Management credential', input, 'Wallets belong to a management credential (svc_api_…) that your operator issues. It is kept in this tab only.'),
      h('button', { type: 'submit' }, 'Show wallets'),
    ),
    list,
  );
  if (credential) await showOrSay();
}

/** The wallet's balance as the chain reads it now (GET /v1/wallets/{id}/balance), filled in when it arrives. */
function balanceOf(wallet: Wallet): HTMLElement {
  const cell = h('span', { class: 'muted', 'data-balance': 'loading' }, 'Reading…');
  json<{ data: Balance }>('GET', `/v1/wallets/${encodeURIComponent(wallet.id)}/balance`, { token: credential }).then(
    ({ data }) => {
      mount(cell, h('strong', {}, symbolAmount(data.amount, data.decimals, data.symbol)));
      cell.className = '';
      cell.dataset.balance = data.amount;
    },
    (error: Error) => {
      mount(cell, 'Unavailable');
      cell.title = error.message;
      cell.dataset.balance = 'error';
    },
  );
  return cell;
}
