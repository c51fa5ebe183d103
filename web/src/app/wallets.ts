// Wallets of the Wallet API. They belong to a management credential (svc_api_…), which the operator
// issues; the user enters it here to list its wallets. It stays in this tab's memory only.
import { dataTable, field, h, mount, notice } from '../shared/dom.js';
import { when } from '../shared/format.js';
import { json } from '../shared/http.js';
import { walletPolicyPanel } from './wallet-policy.js';

interface Wallet { id: string; externalId: string; name: string; address: string | null; status: string; provider: string; createdAt: string }

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
              ['Name', 'External id', 'Address', 'Status', 'Key provider', 'Created'],
              wallets.map((w) => ({ cells: [w.name, w.externalId, w.address ? h('code', {}, w.address) : '—', h('span', { class: `badge ${w.status}` }, w.status), w.provider, when(w.createdAt)] })),
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
