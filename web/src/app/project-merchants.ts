// A project's merchants on its page: the table (renamed in place, disabled and enabled again) and the form
// for a new one. Every change is the owner's PATCH or POST; a refusal is said above the table.
import { dataTable, field, h, mount, notice } from '../shared/dom.js';
import { shortHex } from '../shared/format.js';
import { actionForm, api, type Merchant, type Project } from './project-shared.js';

export function merchantsSection(project: Project, reload: () => Promise<void>): HTMLElement {
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
