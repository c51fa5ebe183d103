// The user's hosted agents and their credits: launch one (POST /agents, paid with credits), follow its
// deployment, give it a model provider's key and chat with it (docs/agents.md).
import { dataTable, field, h, lazyPanel, liveTime, mount, notice } from '../shared/dom.js';
import { expiry, usd, when } from '../shared/format.js';
import { json } from '../shared/http.js';
import { session } from './session.js';

interface Agent { id: string; name: string; type: string; status: string; lastError: string | null; createdAt: string; runtimeInstance: { expiresAt?: string | null } | null }
interface ChatMessage { role: 'system' | 'user' | 'assistant'; content: string }
interface ProviderEntry { provider: string; apiKey: string }

const TYPES = [
  ['runtime_a', 'Chat assistant (runtime_a)'],
  ['runtime_b', 'Assistant with a paying wallet (runtime_b)'],
] as const;
const PROVIDERS = [
  ['openai', 'OpenAI'],
  ['anthropic', 'Anthropic'],
  ['openrouter', 'OpenRouter'],
] as const;
/** What POST /agents charges (AGENT_PRICE_CENTS): one month of a hosted runtime. */
const PRICE_CENTS = 1000;
/** Up to this many agents, each one's panel opens (and loads) at once. */
const OPEN_PANELS = 3;
/** How often the page looks again while a deployment is under way. */
const FOLLOW_MS = 2000;

const api = <T>(method: string, path: string, body?: unknown) => json<{ data: T }>(method, path, { token: session.token, body }).then((r) => r.data);

export async function agentsPage(root: HTMLElement): Promise<void> {
  const [agents, credits] = await Promise.all([api<Agent[]>('GET', '/agents'), api<{ balanceUsdCents: number }>('GET', '/credits')]);
  const name = h('input', { name: 'agentName', required: true, maxlength: 100, autocomplete: 'off' });
  const type = h('select', { name: 'agentType' }, TYPES.map(([value, label]) => h('option', { value }, label)));
  const launchFeedback = h('div');
  const launch: HTMLFormElement = h(
    'form',
    {
      class: 'inline',
      'aria-label': 'Launch an agent',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        mount(launchFeedback);
        const button = launch.querySelector('button')!;
        button.disabled = true;
        try {
          const made = await api<{ agent: Agent; charge: { amountUsdCents: number; balanceAfterUsdCents: number } }>('POST', '/agents', { name: name.value.trim(), type: type.value });
          await agentsPage(root);
          root.querySelector('[data-slot=launched]')?.replaceChildren(
            notice('success', `Launched ${made.agent.name} for ${usd(made.charge.amountUsdCents)} of credits (${usd(made.charge.balanceAfterUsdCents)} left). Its runtime is being deployed; this page follows it.`),
          );
        } catch (error) {
          mount(launchFeedback, notice('error', (error as Error).message)); // e.g. 402: the credits do not cover it
          button.disabled = false;
        }
      },
    },
    field('Agent name', name),
    field('Type', type),
    h('button', { type: 'submit' }, `Launch for ${usd(PRICE_CENTS)} of credits`),
    launchFeedback,
  );
  mount(
    root,
    h('h1', {}, 'Agents and credits'),
    h('section', { class: 'card', 'aria-labelledby': 'credits' }, h('h2', { id: 'credits' }, 'Credits'), h('p', { class: 'balance' }, usd(credits.balanceUsdCents)), h('p', { class: 'muted' }, 'Top up with any x402 client: POST /credits/top-up.')),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'launch' },
      h('h2', { id: 'launch' }, 'Launch an agent'),
      h('p', { class: 'muted' }, `A hosted agent runtime for one month, paid with ${usd(PRICE_CENTS)} of credits.`),
      launch,
      h('div', { 'data-slot': 'launched' }),
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'agents' },
      h('h2', { id: 'agents' }, 'Agents'),
      agents.length === 0
        ? h('p', {}, 'No agents yet.')
        : dataTable(
            ['Name', 'Type', 'Status', 'Paid month', 'Last error', 'Created'],
            agents.map((a) => ({
              attrs: { 'data-agent-id': a.id },
              cells: [
                a.name,
                a.type,
                h('span', { class: `badge ${a.status}` }, a.status),
                a.runtimeInstance?.expiresAt ? liveTime(a.runtimeInstance.expiresAt, expiry, when(a.runtimeInstance.expiresAt)) : '—',
                a.lastError ?? '—',
                when(a.createdAt),
              ],
            })),
          ),
    ),
    agents.map((a) => agentPanel(a, agents.length <= OPEN_PANELS)),
  );
  follow(root, agents);
}

/** While a deployment is under way, looks again every FOLLOW_MS and shows the page anew once a status changed. */
function follow(root: HTMLElement, shown: Agent[]): void {
  if (!shown.some((a) => a.status === 'pending')) return;
  const marker = root.firstElementChild;
  setTimeout(async () => {
    if (root.firstElementChild !== marker || !location.hash.startsWith('#/agents')) return; // the user moved on
    try {
      const now = await api<Agent[]>('GET', '/agents');
      if (root.firstElementChild !== marker) return;
      const changed = now.length !== shown.length || now.some((a) => shown.find((s) => s.id === a.id)?.status !== a.status);
      if (changed) {
        const said = root.querySelector('[data-slot=launched]')?.cloneNode(true);
        await agentsPage(root);
        if (said) root.querySelector('[data-slot=launched]')?.replaceWith(said);
      } else follow(root, shown);
    } catch {
      follow(root, shown); // a blip: try again
    }
  }, FOLLOW_MS);
}

/** One agent: its model providers (keys masked) and a chat in its main session; loads when first opened. */
function agentPanel(agent: Agent, open: boolean): HTMLDetailsElement {
  const base = `/agents/${encodeURIComponent(agent.id)}`;
  const summary = [h('h2', {}, agent.name), h('span', { class: `badge ${agent.status}` }, agent.status)];
  const panel = lazyPanel({ class: 'card agent', 'data-agent-id': agent.id }, summary, open, async (body) => {
    const [providers, history] = await Promise.all([api<ProviderEntry[]>('GET', `${base}/providers`), api<{ messages: ChatMessage[] }>('GET', `${base}/chat/history`)]);
    mount(body, providersSection(agent, base, providers, panel.reload), chatSection(agent, base, history.messages));
  });
  return panel.details;
}

function providersSection(agent: Agent, base: string, providers: ProviderEntry[], reload: () => Promise<void>): HTMLElement {
  const provider = h('select', { name: 'provider' }, PROVIDERS.map(([value, label]) => h('option', { value }, label)));
  const key = h('input', { name: 'providerKey', type: 'password', required: true, autocomplete: 'off', maxlength: 1000 });
  const feedback = h('div');
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'inline',
      'aria-label': `Model provider of ${agent.name}`,
      onsubmit: async (event: Event) => {
        event.preventDefault();
        mount(feedback);
        form.querySelector('button')!.disabled = true;
        try {
          await api('PUT', `${base}/providers`, { provider: provider.value, apiKey: key.value.trim() });
          await reload();
        } catch (error) {
          mount(feedback, notice('error', (error as Error).message));
          form.querySelector('button')!.disabled = false;
        }
      },
    },
    field('Provider', provider),
    field('Provider API key', key, 'Sealed by the service; shown masked afterwards. The key set last answers chats.'),
    h('button', { type: 'submit' }, 'Save key'),
    feedback,
  );
  return h(
    'section',
    {},
    h('h3', {}, 'Model provider'),
    providers.length === 0
      ? h('p', {}, 'No provider key yet: the agent needs one to answer.')
      : h('ul', {}, providers.map((p) => h('li', {}, `${p.provider}: `, h('code', {}, p.apiKey)))),
    form,
  );
}

function chatSection(agent: Agent, base: string, history: ChatMessage[]): HTMLElement {
  const log = h('ol', { class: 'chat', 'aria-live': 'polite', 'aria-label': `Chat with ${agent.name}` });
  const say = (message: ChatMessage) => {
    const item = h('li', { class: `msg ${message.role}` }, h('strong', {}, message.role === 'user' ? 'You' : agent.name), h('p', {}, message.content));
    log.append(item);
    return item;
  };
  for (const message of history) if (message.role !== 'system') say(message);
  const text = h('textarea', { name: 'message', required: true, rows: 2, maxlength: 32 * 1024, class: 'message' });
  const feedback = h('div');
  const form: HTMLFormElement = h(
    'form',
    {
      'aria-label': `Message to ${agent.name}`,
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const content = text.value.trim();
        if (!content) return;
        mount(feedback);
        const button = form.querySelector('button')!;
        button.disabled = true;
        const sent = say({ role: 'user', content });
        text.value = '';
        const waiting = h('li', { class: 'msg assistant muted' }, `${agent.name} is answering…`);
        log.append(waiting);
        try {
          const answer = await api<{ message: ChatMessage }>('POST', `${base}/chat`, { messages: [{ role: 'user', content }], session: 'main' });
          waiting.remove();
          say(answer.message);
        } catch (error) {
          // A failed turn adds nothing to the session: take the message back, so it can be sent again.
          waiting.remove();
          sent.remove();
          text.value = content;
          mount(feedback, notice('error', (error as Error).message));
        } finally {
          button.disabled = false;
        }
      },
    },
    field('Message', text),
    h('button', { type: 'submit' }, 'Send'),
    feedback,
  );
  return h(
    'section',
    {},
    h('h3', {}, 'Chat'),
    agent.status === 'running' ? null : notice('info', `The agent is ${agent.status}: it answers once it runs.`),
    history.length === 0 ? null : h('p', { class: 'muted' }, 'The main session so far.'),
    log,
    form,
  );
}
