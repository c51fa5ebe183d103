import type { Logger } from 'pino';
import { deadlineSignal } from '../../agent-runtime/deadline.js';
import type { AgentSecrets } from './agent-secrets.js';
import { agentsErrors } from './errors.js';
import type { InstanceRow } from './store.js';

/** How long the service waits for a turn: the runtime's own limit (5 minutes, src/agent-runtime/main.ts) and a margin. */
export const TURN_WAIT_MS = 5 * 60_000 + 15_000;
/** The supervisor's probe: a runtime that does not answer this fast is hung. */
export const PROBE_TIMEOUT_MS = 5_000;

export interface RuntimeRequest {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  body?: unknown;
  accept?: string;
  timeoutMs?: number;
  /** Cancels the request (a shutdown): the runtime sees its connection close. */
  signal?: AbortSignal;
}

/** The runtime's day as it reports it (GET/PUT /budget, and a 429). */
export interface RuntimeTokenDay {
  dailyTokens: number;
  usedToday: number;
  resetsAt: string;
  /** The runtime's UTC day of usedToday (absent from runtimes older than it). */
  day?: string;
}

/**
 * The service's side of the runtime's HTTP API: its address and token come from the instance row (sealed
 * under the master key), so any api node reaches any runtime. Failures are the agents module's errors; the
 * runtime's own error text stays in the log.
 */
export class RuntimeClient {
  constructor(
    private readonly secrets: Pick<AgentSecrets, 'open'>,
    private readonly log: Logger,
  ) {}

  /** The runtime's answer as it came; a runtime that cannot be reached is 503 runtime_unavailable. */
  async send(instance: InstanceRow, request: RuntimeRequest): Promise<Response> {
    try {
      return await this.fetch(instance, request);
    } catch {
      throw agentsErrors.runtimeUnavailable();
    }
  }

  /** The request as fetch sends it: a failure is fetch's own (the supervisor tells a timeout from a refusal). */
  fetch(instance: InstanceRow, request: RuntimeRequest): Promise<Response> {
    return fetch(`${instance.url}${request.path}`, {
      method: request.method,
      headers: {
        authorization: `Bearer ${this.secrets.open(instance.id, instance.sealedToken)}`,
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(request.accept ? { accept: request.accept } : {}),
      },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      signal: deadlineSignal(request.timeoutMs ?? TURN_WAIT_MS, request.signal),
    });
  }

  /** A JSON answer, its failures mapped: 429 the token budget, 502 the model provider, anything else 503. */
  async json<T>(instance: InstanceRow, request: RuntimeRequest, now: Date): Promise<T> {
    return this.answer<T>(instance, await this.send(instance, request), now);
  }

  async answer<T>(instance: InstanceRow, response: Response, now: Date): Promise<T> {
    const answer = (await response.json().catch(() => null)) as Record<string, unknown> | null;
    if (response.status === 200 && answer) return answer as T;
    throw this.failure(instance, response.status, answer, now);
  }

  /** The error a runtime's failure answers (a plain answer or a stream's `error` event). */
  failure(instance: InstanceRow, status: number, answer: Record<string, unknown> | null, now: Date) {
    if (status === 429 && answer) {
      const { dailyTokens, usedToday, resetsAt } = answer as unknown as RuntimeTokenDay;
      return agentsErrors.tokenBudgetExhausted({ dailyTokens, usedToday, resetsAt }, now);
    }
    if (status === 413 && answer && typeof answer.maxTokens === 'number') return agentsErrors.turnTokenCapReached(answer.maxTokens);
    // The runtime's own 502 names the provider's status; a proxy's 502 in front of a runtime does not.
    if (status === 502 && answer && 'providerStatus' in answer) return agentsErrors.providerFailed(String(answer?.error ?? 'the model provider failed'), (answer?.providerStatus as number | null) ?? null);
    this.log.warn({ agentId: instance.agentId, status, error: answer?.error }, 'agent runtime answered with an error');
    return agentsErrors.runtimeUnavailable();
  }
}
