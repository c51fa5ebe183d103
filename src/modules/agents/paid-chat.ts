// Chat with an agent sold per token (issue 47): its owner sets a price per 1,000 model tokens and a cap per turn; a
// buyer, signed in nowhere, pays one turn with an x402 `upto` permit (Permit2) for at most the cap's price, from its
// own wallet. The turn runs capped so its tokens cannot cost more than that, and the settle takes what they cost.
import type { PaymentPayload } from '@x402/core/types';
import type { FastifyRequest } from 'fastify';
import { getAddress } from 'viem';
import type { AppContext } from '../../context.js';
import { crashPoint } from '../../platform/crash-points.js';
import { ApiError } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import { parsePermit2 } from '../../x402/facilitator/permit2/payment.js';
import type { UsageResult } from '../../x402/server/metered.js';
import { toApiError } from '../../x402/server/service.js';
import type { AgentChat } from './chat.js';
import type { ChatStore } from './chat-store.js';
import { agentsErrors } from './errors.js';
import type { ChatPriceRow, PaidChatStore, PaidTurnRow, PermitKey } from './paid-chat-store.js';
import type { ChatPriceView, ChatResult, PaidChatResult } from './schemas.js';
import type { AgentRow, AgentsStore } from './store.js';

/** What one turn is sold at: fixed when the buyer's request arrives (or, for a permit that has a turn, when that began). */
interface Terms {
  pricePer1kTokens: bigint;
  maxTokens: number;
  payTo: string;
}

/** How long a permit may stay valid: a turn runs at most 5 minutes, and the settle comes after it. */
const PERMIT_SECONDS = 600;
/** The least validity a new permit must have left when it arrives (by the chain's time): most turns end well inside it. */
export const MIN_PERMIT_SECONDS_LEFT = 60;

/**
 * What `tokens` cost at `pricePer1kTokens`: rounded up, and any use at least `minimum` (the least our facilitator
 * settles, FACILITATOR_MIN_SETTLE_AMOUNT: below it a settle is refused as dust); never above the signed maximum.
 */
export const costOf = (tokens: number, pricePer1kTokens: bigint, maximum: bigint, minimum: bigint): bigint => {
  if (tokens <= 0) return 0n;
  const exact = (BigInt(tokens) * pricePer1kTokens + 999n) / 1000n;
  const cost = exact > minimum ? exact : minimum;
  return cost < maximum ? cost : maximum;
};

/** The `upto` maximum of a turn: the price of its cap, rounded up. */
export const maximumOf = (terms: Pick<Terms, 'pricePer1kTokens' | 'maxTokens'>): bigint => (BigInt(terms.maxTokens) * terms.pricePer1kTokens + 999n) / 1000n;

type Settlement = Extract<UsageResult, { paid: true }>['settlement'];
/** Unpaid or refused: the 402. Paid: the turn's answer, or its failure (which cost nothing), each with its settlement. */
export type PaidChatAnswer = { paid: false; result: Extract<UsageResult, { paid: false }> } | { paid: true; settlement: Settlement; body: PaidChatResult } | { paid: true; settlement: Settlement; failure: ApiError };

export class PaidChat {
  constructor(
    private readonly ctx: AppContext,
    private readonly agents: AgentsStore,
    private readonly store: PaidChatStore,
    private readonly chat: AgentChat,
    private readonly chats: ChatStore,
    /** runtime_b's own wallet address (null: no wallet yet, or runtime_a). */
    private readonly walletAddress: (agent: AgentRow) => Promise<string | null>,
  ) {}

  async price(agent: AgentRow): Promise<ChatPriceView | null> {
    const row = await this.store.price(agent.id);
    return row && this.#view(row);
  }

  /** The owner's price; it applies to permits signed from now on (a turn running keeps the price it was signed at). */
  async setPrice(agent: AgentRow, input: { pricePer1kTokens: string; maxTokensPerTurn: number; payTo?: string | undefined }): Promise<ChatPriceView> {
    const payTo = input.payTo ?? (await this.walletAddress(agent));
    if (!payTo) throw agentsErrors.payToRequired();
    // A maximum below what the facilitator settles could never be paid.
    const minimum = this.ctx.config.facilitatorLimits.minSettleAmount;
    if (maximumOf({ pricePer1kTokens: BigInt(input.pricePer1kTokens), maxTokens: input.maxTokensPerTurn }) < minimum) throw agentsErrors.maximumBelowMinimum(minimum);
    const row = await this.store.setPrice({ agentId: agent.id, pricePer1kTokens: BigInt(input.pricePer1kTokens).toString(), maxTokensPerTurn: input.maxTokensPerTurn, payTo: getAddress(payTo), updatedAt: this.ctx.clock.now() });
    return this.#view(row);
  }

  /** Stops selling: new requests are 404; permits that already have a turn are answered as before. */
  async stopSelling(agent: AgentRow): Promise<boolean> {
    return this.store.deletePrice(agent.id);
  }

  /**
   * One paid request. The order matters: a permit that already has a turn is answered on that turn's terms (the price
   * may have changed since, or selling stopped); otherwise the agent must sell and run before a challenge is made or a
   * permit verified, so a refusal spends nothing. Then chargeUsage verifies the permit, records it (one purchase per
   * permit), and calls `use`, which runs the turn once and keeps what it cost, before the settle asks for exactly that.
   */
  async serve(request: FastifyRequest, agentId: string, messages: ChatResult['message'][]): Promise<PaidChatAnswer> {
    const agent = await this.agents.byId(agentId);
    if (!agent || agent.status === 'deleted') throw agentsErrors.chatNotForSale();
    const permit = this.#permitOf(this.#payment(request));
    const existing = permit && (await this.store.find(permit.key));
    // A permit whose turn was another agent's is refused by chargeUsage (it bought another resource).
    const known = existing?.agentId === agent.id ? existing : null;
    // A new permit must outlive a turn and its settle: one that expires first would buy a turn it cannot pay for.
    if (!known && permit && permit.payment.deadline < (await this.ctx.chain.blockTime()) + BigInt(MIN_PERMIT_SECONDS_LEFT)) throw agentsErrors.permitTooShort(MIN_PERMIT_SECONDS_LEFT);
    let terms: Terms;
    if (known) {
      terms = { pricePer1kTokens: BigInt(known.pricePer1kTokens), maxTokens: known.maxTokens, payTo: known.payTo };
    } else {
      const price = await this.store.price(agent.id);
      if (!price) throw agentsErrors.chatNotForSale();
      if (agent.status !== 'running') throw agentsErrors.notRunning(agent.status);
      terms = { pricePer1kTokens: BigInt(price.pricePer1kTokens), maxTokens: price.maxTokensPerTurn, payTo: price.payTo };
    }
    const resource = {
      url: this.ctx.x402.resourceUrl(request),
      description: `Chat with agent ${agent.name}: ${terms.pricePer1kTokens} atomic units per 1,000 tokens, at most ${terms.maxTokens} tokens a turn`,
      mimeType: 'application/json',
      amount: maximumOf(terms).toString(),
      payTo: terms.payTo,
      maxTimeoutSeconds: PERMIT_SECONDS,
    };
    const result = await this.ctx.x402.chargeUsage(request, resource, (maximum, _recordId, key) => this.#use(agent, messages, terms, maximum, key, request.id));
    if (!result.paid) return { paid: false, result };
    const turn = (await this.store.find(result.key))!;
    if (turn.status !== 'completed') {
      // The turn failed and cost nothing (settled for 0): its error, with the settlement that says so.
      const failure = turn.answer as { status: number; code: string; message: string; details?: unknown };
      return { paid: true, settlement: result.settlement, failure: new ApiError(failure.status, failure.code, failure.message, failure.details) };
    }
    const usage = { tokens: turn.tokens!, pricePer1kTokens: turn.pricePer1kTokens, amount: turn.amount!, maximum: turn.maximum };
    return { paid: true, settlement: result.settlement, body: { ...(turn.answer as ChatResult), usage } };
  }

  /**
   * What the permit's turn used: runs it the first time (its row, keyed by the permit, inserted before it begins, so
   * two requests with one permit run one turn), else reads what it cost. A turn that failed costs nothing.
   */
  async #use(agent: AgentRow, messages: ChatResult['message'][], terms: Terms, maximum: bigint, key: PermitKey, requestId: string): Promise<bigint> {
    const turnId = newId();
    const opened = await this.store.open({ ...key, agentId: agent.id, turnId, pricePer1kTokens: terms.pricePer1kTokens.toString(), maxTokens: terms.maxTokens, maximum: maximum.toString(), payTo: terms.payTo }, this.ctx.clock.now());
    if (!opened) return this.#usedBy((await this.store.find(key))!);
    crashPoint('agents.paid-turn.after-open');
    try {
      await this.chat.paidTurn(agent, { messages, session: `x402:${key.payer}` }, {
        turnId,
        requestId,
        maxTokens: terms.maxTokens,
        end: async (tx, tokens, result) => {
          await this.store.complete(tx, key, { tokens, amount: costOf(tokens, terms.pricePer1kTokens, maximum, this.ctx.config.facilitatorLimits.minSettleAmount), answer: result }, this.ctx.clock.now());
        },
      });
      crashPoint('agents.paid-turn.after-turn');
    } catch (error) {
      const failure = error instanceof ApiError ? error : agentsErrors.runtimeUnavailable();
      if (!(error instanceof ApiError)) this.ctx.log.error({ err: error, agentId: agent.id }, 'paid agent turn failed');
      await this.store.fail(key, { status: failure.status, code: failure.code, message: failure.message, details: failure.details }, this.ctx.clock.now());
    }
    return this.#usedBy((await this.store.find(key))!);
  }

  /**
   * A permit's turn as it stands. Running: in progress on some node (409, retry), unless its chat turn failed (a crash
   * under it: the sweep failed it) or never began (a crash before it) — then it failed, and costs nothing.
   */
  async #usedBy(turn: PaidTurnRow): Promise<bigint> {
    if (turn.status !== 'running') return BigInt(turn.amount ?? '0');
    const chatTurn = await this.chats.turn(turn.turnId);
    const staleMs = this.ctx.config.agentTurnStaleSeconds * 1000;
    const dead = chatTurn ? chatTurn.status === 'failed' : this.ctx.clock.now().getTime() - turn.createdAt.getTime() > staleMs;
    if (!dead) throw agentsErrors.paidTurnInProgress();
    const failure = agentsErrors.runtimeUnavailable();
    await this.store.fail(turn, { status: failure.status, code: failure.code, message: 'The turn was interrupted (the service stopped under it); nothing was charged', details: failure.details }, this.ctx.clock.now());
    const now = (await this.store.find(turn))!;
    return BigInt(now.amount ?? '0');
  }

  /** The request's payment, or null (none; a malformed header is refused as chargeUsage refuses it). */
  #payment(request: FastifyRequest): PaymentPayload | null {
    try {
      return this.ctx.x402.readPayment(request);
    } catch (error) {
      throw toApiError(error);
    }
  }

  /** The payment as a Permit2 permit (its key as the payment records name it, and its deadline), or null. */
  #permitOf(payload: PaymentPayload | null): Extract<ReturnType<typeof parsePermit2>, { ok: true }> | null {
    if (!payload?.accepted) return null;
    try {
      const parsed = parsePermit2(this.ctx.x402.network, payload, payload.accepted);
      return parsed.ok ? parsed : null;
    } catch {
      // Not a permit we could have recorded: chargeUsage refuses it in its own words.
      return null;
    }
  }

  #view(row: ChatPriceRow): ChatPriceView {
    const pricePer1kTokens = BigInt(row.pricePer1kTokens);
    return {
      pricePer1kTokens: pricePer1kTokens.toString(),
      maxTokensPerTurn: row.maxTokensPerTurn,
      maximum: maximumOf({ pricePer1kTokens, maxTokens: row.maxTokensPerTurn }).toString(),
      payTo: row.payTo,
      network: this.ctx.chain.network,
      asset: this.ctx.chain.asset.address,
      updatedAt: row.updatedAt.toISOString(),
    };
  }
}
