// A project's event queues on its page: their depth by state, which queue receives its payment-intent events,
// and a new queue (made with the project's API key, as a merchant's server makes one).
import { dataTable, field, h, mount, notice } from '../shared/dom.js';
import { json } from '../shared/http.js';
import { actionForm, api, projectKeys, type Project } from './project-shared.js';

interface Queue { id: string; name: string; depth?: Record<string, number> }

export async function queuesSection(project: Project, reload: () => Promise<void>): Promise<HTMLElement> {
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
