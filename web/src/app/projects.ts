// Projects: the list (and a new project, whose first API key is shown once) and a project's page, which
// puts together its sections: API keys (here: created and shown once, revoked), merchants
// (project-merchants.ts), payment intents (project-intents.ts), refunds (refunds.ts) and event queues
// (project-queues.ts).
import { dataTable, field, h, mount } from '../shared/dom.js';
import { when } from '../shared/format.js';
import { intentsSection, newIntentSection } from './project-intents.js';
import { merchantsSection } from './project-merchants.js';
import { queuesSection } from './project-queues.js';
import { actionForm, api, projectKeys, type ApiKey, type Project } from './project-shared.js';
import { refundWalletForm } from './refunds.js';
import { shownOnce } from './secret.js';

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
