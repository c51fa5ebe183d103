import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../platform/db.js';
import { errorBody } from '../../platform/http/render.js';
import { ApiError } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import type { AgentSecrets } from './agent-secrets.js';
import type { ChatStore, TranscriptEntry } from './chat-store.js';
import { agentsErrors } from './errors.js';
import type { AgentPayments } from './payments.js';
import type { RuntimeClient } from './runtime-client.js';
import { DEFAULT_MODELS, DEFAULT_MAX_OUTPUT_TOKENS, type ChatBody, type ChatHistory, type ChatResult } from './schemas.js';
import type { AgentRow, AgentsStore, InstanceRow } from './store.js';
import { trimToContext } from './transcript.js';

/**
 * What the runtime answers for a turn (src/agent-runtime/model-types.ts `TurnOutcome`), checked before it is stored:
 * a turn adds only assistant entries and tool results, of bounded number and size.
 */
const MAX_ENTRY_CHARS = 256 * 1024;
const tokens = z.number().int().min(0).max(1e9);
/** The runtime's day of tokens after the turn (its budget's count, which the service mirrors). */
const tokenDay = z.object({ day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/), usedToday: tokens });
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
  day: tokenDay.optional(),
});
type TurnOutcome = z.infer<typeof turnOutcome>;

/** How often a node renews the heartbeat of the turns it runs, and the sweep looks: a quarter of the stale age. */
export const turnHeartbeatMs = (staleSeconds: number) => staleSeconds * 250;
/** How long a shutdown waits for the turns it stopped to be recorded as failed (the listeners then drain). */
const SHUTDOWN_WAIT_MS = 1_500;

interface PreparedTurn {
  id: string;
  session: string;
  agent: AgentRow;
  instance: InstanceRow;
  /** Aborted when the service shuts down: the runtime's request goes, and with it the runtime's turn. */
  controller: AbortController;
  request: { method: 'POST'; path: '/chat'; body: unknown; signal: AbortSignal };
}

/** A paid turn (paid-chat.ts): its id (given before it begins), its token cap, and what its completion also writes. */
export interface PaidTurnOptions {
  turnId: string;
  maxTokens: number;
  end: (tx: Executor, tokens: number, result: ChatResult) => Promise<void>;
  /** The request that bought the turn (its X-Request-Id): stored with the turn, sent to the runtime. */
  requestId?: string;
}

/** A transcript entry a user reads as a message: not a tool result, not a bare tool call. */
const isMessage = (entry: TranscriptEntry) => entry.role !== 'tool' && !(entry.toolCalls && !entry.content);

/**
 * Chat with an agent. The service keeps each session's transcript (chat-store.ts) and the runtime runs turns.
 * A turn is stored with the user's messages before the model is called (`running`, its heartbeat renewed by
 * this node), then sends the session's completed turns (trimmed to the context budget, the bot's system
 * prompt first) with the new messages; what the runtime answers (its tool calls and results, and the reply)
 * completes it. A turn that fails stays in the history as `failed` with why, its tool payments listed with
 * it; a node that dies leaves its turns to the sweep, which fails them once their heartbeat is stale; a
 * shutdown stops the turns it runs (a streamed client gets `event: error`) and fails them.
 */
export class AgentChat {
  readonly #live = new Map<string, AbortController>();
  #beat: NodeJS.Timeout | null = null;
  #stopping = false;

  constructor(
    private readonly ctx: AppContext,
    private readonly store: AgentsStore,
    private readonly chats: ChatStore,
    private readonly secrets: AgentSecrets,
    private readonly runtime: RuntimeClient,
    private readonly payments: AgentPayments,
  ) {}

  /** `requestId`: the request that asked (its X-Request-Id), stored with the turn and sent to the runtime. */
  async chat(agent: AgentRow, body: ChatBody, requestId?: string): Promise<ChatResult> {
    return this.#run(await this.#prepare(agent, body, requestId));
  }

  /**
   * One turn bought per token (paid-chat.ts). The buyer's messages are the whole conversation (the session's history
   * is not sent: a buyer reads none of it); the runtime caps the turn at `maxTokens`; `end` writes what the turn's
   * tokens cost, with its answer, in the transaction that completes it. A failure throws as chat() does.
   */
  async paidTurn(agent: AgentRow, body: ChatBody, paid: PaidTurnOptions): Promise<ChatResult> {
    return this.#run(await this.#prepare(agent, body, paid.requestId, paid), paid.end);
  }

  async #run(turn: PreparedTurn, end?: PaidTurnOptions['end']): Promise<ChatResult> {
    try {
      const response = await this.runtime.send(turn.instance, turn.request);
      const answer = (await response.json().catch(() => null)) as Record<string, unknown> | null;
      if (response.status !== 200 || !answer) {
        await this.#mirror(turn.agent.id, answer?.day);
        throw this.runtime.failure(turn.instance, response.status, answer, this.ctx.clock.now());
      }
      return await this.#record(turn, answer, end);
    } catch (error) {
      throw await this.#failed(turn, error);
    } finally {
      this.#end(turn.id);
    }
  }

  /**
   * The same turn as Server-Sent Events: `delta` `{ text }` per chunk, then `done` with the JSON answer's
   * `{ message, raw, text }` (after it is stored), or `error` with the envelope's error. Refusals before the
   * first chunk (the agent, the budget, the provider) are plain error answers. A client that goes away does
   * not stop the turn: it completes into the history.
   */
  async stream(agent: AgentRow, body: ChatBody, reply: FastifyReply, requestId?: string): Promise<void> {
    const turn = await this.#prepare(agent, body, requestId);
    let response: Response;
    try {
      response = await this.runtime.send(turn.instance, { ...turn.request, accept: 'text/event-stream' });
      if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        // Refused before any text: the answer is the runtime's plain failure (a success always streams).
        const answer = (await response.json().catch(() => null)) as Record<string, unknown> | null;
        await this.#mirror(agent.id, answer?.day);
        throw this.runtime.failure(turn.instance, response.status, answer, this.ctx.clock.now());
      }
    } catch (error) {
      const failure = await this.#failed(turn, error);
      this.#end(turn.id);
      throw failure;
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
    let broke: unknown = agentsErrors.runtimeUnavailable();
    try {
      for await (const event of serverSentEvents(response.body!)) {
        if (event.name === 'delta') write('delta', JSON.parse(event.data));
        else if (event.name === 'done') {
          write('done', await this.#record(turn, JSON.parse(event.data)));
          finished = true;
        } else if (event.name === 'error') {
          const { status, ...answer } = JSON.parse(event.data) as { status: number } & Record<string, unknown>;
          await this.#mirror(agent.id, answer.day);
          fail(await this.#failed(turn, this.runtime.failure(turn.instance, status, answer, this.ctx.clock.now())));
          finished = true;
        }
      }
    } catch (error) {
      broke = error;
      if (!turn.controller.signal.aborted) this.ctx.log.warn({ err: error, agentId: agent.id }, 'agent runtime stream broke');
    }
    if (!finished) fail(await this.#failed(turn, broke));
    this.#end(turn.id);
    out.end();
  }

  async history(agent: AgentRow, session: string): Promise<ChatHistory> {
    const [entries, turns] = await Promise.all([this.chats.entries(agent.id, session), this.chats.turns(agent.id, session)]);
    const paid = await this.payments.ofTurns(agent, turns.map((turn) => turn.id));
    return {
      messages: entries.filter(isMessage).map((entry) => ({ role: entry.role as 'system' | 'user' | 'assistant', content: entry.content })),
      raw: entries,
      turns: turns.map((turn) => ({
        id: turn.id,
        status: turn.status,
        error: turn.error,
        requestId: turn.requestId,
        tokens: turn.tokens,
        createdAt: turn.createdAt.toISOString(),
        finishedAt: turn.finishedAt?.toISOString() ?? null,
        payments: paid.get(turn.id) ?? [],
      })),
    };
  }

  /**
   * The service is stopping: every turn this node runs is cut (the runtime's request aborted, so the runtime
   * stops the turn too) and recorded as failed, its client told (`event: error`, or a 503); new turns are refused.
   */
  async shutdown(): Promise<void> {
    this.#stopping = true;
    for (const controller of this.#live.values()) controller.abort();
    const deadline = Date.now() + SHUTDOWN_WAIT_MS;
    while (this.#live.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  /** Fails the turns whose node died (their heartbeat stale, database time): the sweep's work. */
  async failStale(): Promise<void> {
    const failed = await this.chats.failStale(this.ctx.clock.now(), this.ctx.config.agentTurnStaleSeconds);
    if (failed.length > 0) this.ctx.log.warn({ turns: failed.map((t) => t.id) }, 'agent turns interrupted (their node stopped): failed');
  }

  async #prepare(agent: AgentRow, body: ChatBody, askedBy: string | undefined, paid?: PaidTurnOptions): Promise<PreparedTurn> {
    if (this.#stopping) throw agentsErrors.serviceStopping();
    if (agent.status !== 'running') throw agentsErrors.notRunning(agent.status);
    const [instance, [key], history] = await Promise.all([this.store.instanceOf(agent.id), this.store.providerKeys(agent.id), paid ? [] : this.chats.context(agent.id, body.session)]);
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
    // The turn and the user's messages are stored before the model is called: a crash from here on leaves them.
    const id = paid?.turnId ?? newId();
    const requestId = askedBy ?? null;
    await this.chats.beginTurn({ id, agentId: agent.id, session: body.session, requestId }, added, this.ctx.clock.now());
    const controller = new AbortController();
    this.#begin(id, controller);
    const turnBody = { transcript, provider, sampling, turn: { id, ...(requestId ? { requestId } : {}), ...(paid ? { maxTokens: paid.maxTokens, tools: false } : {}) } };
    return { id, session: body.session, agent, instance, controller, request: { method: 'POST', path: '/chat', body: turnBody, signal: controller.signal } };
  }

  async #record(turn: PreparedTurn, answer: unknown, end?: PaidTurnOptions['end']): Promise<ChatResult> {
    const parsed = turnOutcome.safeParse(answer);
    if (!parsed.success) {
      this.ctx.log.error({ agentId: turn.agent.id, issues: parsed.error.issues.slice(0, 5) }, 'agent runtime answered a turn that is not one');
      throw agentsErrors.runtimeUnavailable();
    }
    const outcome: TurnOutcome = parsed.data;
    const { inputTokens, outputTokens } = outcome.usage;
    const result: ChatResult = { message: { role: 'assistant', content: outcome.text }, raw: outcome.raw ?? null, text: outcome.text };
    const tokens = inputTokens + outputTokens;
    const stored = await this.chats.completeTurn({ id: turn.id, agentId: turn.agent.id, session: turn.session }, outcome.entries as TranscriptEntry[], tokens, outcome.day ?? null, this.ctx.clock.now(), end && ((tx) => end(tx, tokens, result)));
    // Ended meanwhile (a shutdown, or the sweep took this node for dead): the answer is not the history's.
    if (!stored) throw turn.controller.signal.aborted ? agentsErrors.serviceStopping() : agentsErrors.runtimeUnavailable();
    return result;
  }

  /** Records the turn as failed (once) and answers the error its client gets: a shutdown's own, or the failure's. */
  async #failed(turn: PreparedTurn, error: unknown): Promise<ApiError> {
    const answer = turn.controller.signal.aborted ? agentsErrors.serviceStopping() : error instanceof ApiError ? error : agentsErrors.runtimeUnavailable();
    if (!(error instanceof ApiError) && !turn.controller.signal.aborted) this.ctx.log.error({ err: error, agentId: turn.agent.id }, 'agent turn failed');
    const why = `${answer.code}: ${answer.message}`;
    await this.chats.failTurn(turn.id, why, this.ctx.clock.now()).catch((failure: unknown) => this.ctx.log.error({ err: failure, turnId: turn.id }, 'could not record the turn as failed; the sweep will'));
    return answer;
  }

  /** The runtime's day count, when its answer carries one: the stored count rises to it. */
  async #mirror(agentId: string, day: unknown): Promise<void> {
    const parsed = tokenDay.safeParse(day);
    if (parsed.success) await this.chats.mirrorTokens(agentId, parsed.data);
  }

  #begin(turnId: string, controller: AbortController): void {
    this.#live.set(turnId, controller);
    this.#beat ??= setInterval(() => {
      this.chats.heartbeat([...this.#live.keys()]).catch((error: unknown) => this.ctx.log.warn({ err: error }, 'agent turn heartbeat failed'));
    }, turnHeartbeatMs(this.ctx.config.agentTurnStaleSeconds)).unref();
  }

  #end(turnId: string): void {
    this.#live.delete(turnId);
    if (this.#live.size === 0 && this.#beat) {
      clearInterval(this.#beat);
      this.#beat = null;
    }
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
