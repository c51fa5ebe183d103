import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { errorBody } from '../../platform/http/render.js';
import { ApiError } from '../../platform/http/errors.js';
import type { AgentSecrets } from './agent-secrets.js';
import type { ChatStore, TranscriptEntry } from './chat-store.js';
import { agentsErrors } from './errors.js';
import type { RuntimeClient } from './runtime-client.js';
import { DEFAULT_MODELS, DEFAULT_MAX_OUTPUT_TOKENS, type ChatBody, type ChatHistory, type ChatResult } from './schemas.js';
import type { AgentRow, AgentsStore, InstanceRow } from './store.js';
import { trimToContext } from './transcript.js';

/**
 * What the runtime answers for a turn (src/agent-runtime/models.ts `TurnOutcome`), checked before it is stored:
 * a turn adds only assistant entries and tool results, of bounded number and size.
 */
const MAX_ENTRY_CHARS = 256 * 1024;
const tokens = z.number().int().min(0).max(1e9);
const turnOutcome = z.object({
  text: z.string().max(MAX_ENTRY_CHARS),
  raw: z.unknown(),
  entries: z
    .array(
      z.union([
        z.strictObject({
          role: z.literal('assistant'),
          content: z.string().max(MAX_ENTRY_CHARS),
          toolCalls: z.array(z.strictObject({ id: z.string().max(200), name: z.string().max(100), input: z.record(z.string(), z.unknown()) })).max(16).optional(),
        }),
        z.strictObject({ role: z.literal('tool'), toolCallId: z.string().max(200), name: z.string().max(100), content: z.string().max(MAX_ENTRY_CHARS) }),
      ]),
    )
    .min(1)
    .max(100),
  usage: z.object({ inputTokens: tokens, outputTokens: tokens }),
});
type TurnOutcome = z.infer<typeof turnOutcome>;

interface PreparedTurn {
  agent: AgentRow;
  instance: InstanceRow;
  added: TranscriptEntry[];
  request: { method: 'POST'; path: '/chat'; body: unknown };
}

/** A transcript entry a user reads as a message: not a tool result, not a bare tool call. */
const isMessage = (entry: TranscriptEntry) => entry.role !== 'tool' && !(entry.toolCalls && !entry.content);

/**
 * Chat with an agent. The service keeps each session's transcript (chat-store.ts) and the runtime runs turns:
 * a turn sends the session (trimmed to the context budget, the bot's system prompt first) with the new
 * messages, and the runtime answers what the turn added (its tool calls and results, and the reply), which
 * is appended with the new messages and the turn's tokens. A turn that fails adds nothing.
 */
export class AgentChat {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: AgentsStore,
    private readonly chats: ChatStore,
    private readonly secrets: AgentSecrets,
    private readonly runtime: RuntimeClient,
  ) {}

  async chat(agent: AgentRow, body: ChatBody): Promise<ChatResult> {
    const turn = await this.#prepare(agent, body);
    return this.#record(turn, body.session, await this.runtime.json<unknown>(turn.instance, turn.request, this.ctx.clock.now()));
  }

  /**
   * The same turn as Server-Sent Events: `delta` `{ text }` per chunk, then `done` with the JSON answer's
   * `{ message, raw, text }` (after it is stored), or `error` with the envelope's error. Refusals before the
   * first chunk (the agent, the budget, the provider) are plain error answers. A client that goes away does
   * not stop the turn: it completes into the history.
   */
  async stream(agent: AgentRow, body: ChatBody, reply: FastifyReply): Promise<void> {
    const turn = await this.#prepare(agent, body);
    const response = await this.runtime.send(turn.instance, { ...turn.request, accept: 'text/event-stream' });
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      // Refused before any text: the answer is the runtime's plain failure (a success always streams).
      throw this.runtime.failure(turn.instance, response.status, (await response.json().catch(() => null)) as Record<string, unknown> | null, this.ctx.clock.now());
    }
    reply.hijack();
    const out = reply.raw;
    // The headers the hooks set so far (the request id, CORS) go too: a hijacked reply skips Fastify's sending.
    out.writeHead(200, { ...(reply.getHeaders() as OutgoingHttpHeaders), 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
    const write = (event: string, data: unknown) => {
      if (!out.destroyed) out.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const fail = (error: ApiError) => write('error', errorBody('envelope', error.status, error.code, error.message, error.details));
    let finished = false;
    try {
      for await (const event of serverSentEvents(response.body!)) {
        if (event.name === 'delta') write('delta', JSON.parse(event.data));
        else if (event.name === 'done') {
          write('done', await this.#record(turn, body.session, JSON.parse(event.data)));
          finished = true;
        } else if (event.name === 'error') {
          const { status, ...answer } = JSON.parse(event.data) as { status: number } & Record<string, unknown>;
          fail(this.runtime.failure(turn.instance, status, answer, this.ctx.clock.now()));
          finished = true;
        }
      }
    } catch (error) {
      this.ctx.log.warn({ err: error, agentId: agent.id }, 'agent runtime stream broke');
    }
    if (!finished) fail(agentsErrors.runtimeUnavailable());
    out.end();
  }

  async history(agent: AgentRow, session: string): Promise<ChatHistory> {
    const entries = await this.chats.entries(agent.id, session);
    return { messages: entries.filter(isMessage).map((entry) => ({ role: entry.role as 'system' | 'user' | 'assistant', content: entry.content })), raw: entries };
  }

  async #prepare(agent: AgentRow, body: ChatBody): Promise<PreparedTurn> {
    if (agent.status !== 'running') throw agentsErrors.notRunning(agent.status);
    const [instance, [key], history] = await Promise.all([this.store.instanceOf(agent.id), this.store.providerKeys(agent.id), this.chats.entries(agent.id, body.session)]);
    if (!key) throw agentsErrors.providerNotConfigured();
    if (!instance) throw agentsErrors.runtimeUnavailable();
    const settings = agent.botSettings ?? {};
    const added: TranscriptEntry[] = body.messages.map((message) => ({ role: message.role, content: message.content }));
    const system: TranscriptEntry[] = settings.systemPrompt ? [{ role: 'system', content: settings.systemPrompt }] : [];
    const provider = {
      name: key.provider,
      apiKey: this.secrets.openProviderKey(agent.id, key.provider, key.sealedKey),
      baseUrl: this.ctx.config.agentProviders[key.provider],
      model: agent.models?.[key.provider] ?? DEFAULT_MODELS[key.provider],
    };
    const sampling = { maxOutputTokens: settings.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS, ...(settings.temperature === undefined ? {} : { temperature: settings.temperature }) };
    const transcript = [...system, ...trimToContext([...history, ...added])];
    return { agent, instance, added, request: { method: 'POST', path: '/chat', body: { transcript, provider, sampling } } };
  }

  async #record(turn: PreparedTurn, session: string, answer: unknown): Promise<ChatResult> {
    const parsed = turnOutcome.safeParse(answer);
    if (!parsed.success) {
      this.ctx.log.error({ agentId: turn.agent.id, issues: parsed.error.issues.slice(0, 5) }, 'agent runtime answered a turn that is not one');
      throw agentsErrors.runtimeUnavailable();
    }
    const outcome: TurnOutcome = parsed.data;
    const { inputTokens, outputTokens } = outcome.usage;
    await this.chats.recordTurn(turn.agent.id, session, [...turn.added, ...(outcome.entries as TranscriptEntry[])], inputTokens + outputTokens, this.ctx.clock.now());
    return { message: { role: 'assistant', content: outcome.text }, raw: outcome.raw ?? null, text: outcome.text };
  }
}

/** The events of a Server-Sent Events body (the runtime's: `event:` and one `data:` line each). */
async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ name: string; data: string }> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const name = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (name && data !== undefined) yield { name, data };
    }
  }
}
