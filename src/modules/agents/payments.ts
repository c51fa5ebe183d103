import { timingSafeEqual } from 'node:crypto';
import { erc20Abi, type Address } from 'viem';
import type { AppContext } from '../../context.js';
import { ApiError, unauthorized } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import type { Caller } from '../../platform/request-context.js';
import type { AgentSecrets } from './agent-secrets.js';
import type { ChatStore } from './chat-store.js';
import { agentsErrors } from './errors.js';
import type { AgentPaymentView } from './schemas.js';
import { AGENTS_WALLET_OWNER } from './deployer.js';
import type { PaidChatStore } from './paid-chat-store.js';
import type { AgentRow, AgentsStore, HoldRow } from './store.js';

export interface ToolPayment {
  url: string;
  method: 'GET' | 'POST';
  body?: unknown;
  /** At most this much for this call (atomic units); the remaining budget when absent. */
  maxAmount?: string;
  /** An approval of the wallet's policy its user gave for this call (an earlier call answered approval_pending). */
  approvalId?: string;
  /** The chat turn whose tool call pays: it must still be running. */
  turnId?: string;
}

/** The wallet's refusals a tool payment passes on to the model as they are (its spend policy's, approvals'). */
const POLICY_REFUSAL = /^(policy_|approval)/;

/**
 * A hold whose payment row is still missing this long after it opened was never signed: pay-and-call records
 * the payment before its signature leaves the process, and its upstream call and signing end long before.
 */
const UNSIGNED_AFTER_MS = 30 * 60_000;

type Outcome = { status: 'pending' | 'settled' | 'failed' | 'unknown'; amount: string } | null;

/**
 * runtime_b's tool: pay-and-call from the agent's own wallet, within the budget its user set. Enforced here,
 * not in the runtime: the runtime holds no wallet credential, only its token for this route. Each call first
 * opens a hold of its maximum (one transaction with the budget's conditional UPDATE, so concurrent calls never
 * hold more than is left), named by the id the wallet's payment will have; then pays with that maximum. The
 * hold follows the payment: nothing signed (refused, failed before signing, no payment asked) releases it at
 * once; a payment signed shrinks it to its amount, spent when the wallets reconciler finds it settled,
 * released when it failed. The sweep closes the holds a call left open (a crash, an unknown outcome).
 */
export class AgentPayments {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: AgentsStore,
    private readonly chats: ChatStore,
    private readonly secrets: AgentSecrets,
    private readonly paidTurns: PaidChatStore,
  ) {}

  /**
   * One tool payment. The checks in order: the caller is the agent's current runtime; the agent runs and has
   * a wallet; the turn that asks still runs (a turn the service gave up on — a shutdown, a crash — pays nothing
   * more); then the hold on the budget, then the wallet's pay-and-call under the wallet's spend policy. Every
   * refusal tells the model why and what remains (the budget, the policy's limits), never the wallet's
   * `maxPayment`, which the model did not set.
   */
  async pay(agentId: string, presentedToken: string, input: ToolPayment, caller?: Caller) {
    const agent = await this.store.byId(agentId);
    const instance = agent && (await this.store.instanceOf(agentId));
    // Only the agent's current runtime: its token opens from the instance row.
    if (!agent || !instance || !sameToken(this.secrets.open(instance.id, instance.sealedToken), presentedToken)) throw unauthorized();
    if (agent.status !== 'running') throw agentsErrors.notRunning(agent.status);
    if (agent.type !== 'runtime_b' || !agent.walletId || !agent.walletCredentialId) throw agentsErrors.noWallet();
    if (input.turnId !== undefined) {
      const turn = await this.chats.turn(input.turnId);
      if (!turn || turn.agentId !== agentId || turn.status !== 'running') throw agentsErrors.turnNotRunning();
      // A turn a buyer paid for runs without tools; a runtime that offered them anyway pays nothing for it.
      if (await this.paidTurns.isPaidTurn(turn.id)) throw agentsErrors.paidTurnPays();
    }
    const walletId = agent.walletId;

    const remaining = BigInt(agent.paymentBudget) - BigInt(agent.paymentSpent);
    const asked = input.maxAmount === undefined ? remaining : BigInt(input.maxAmount);
    const amount = asked < remaining ? asked : remaining;
    const hold = { id: newId(), agentId, walletId, amount, turnId: input.turnId ?? null };
    if (amount <= 0n || !(await this.store.openHold(hold, this.ctx.clock.now()))) throw agentsErrors.paymentBudgetExhausted(remaining < 0n ? 0n : remaining, await this.#limits(walletId));
    let result;
    try {
      result = await this.ctx.services.walletPayAndCall(
        walletId,
        agent.walletCredentialId,
        {
          url: input.url,
          method: input.method,
          body: input.body,
          maxPayment: { network: this.ctx.chain.network, asset: this.ctx.chain.asset.address, amount: amount.toString() },
          ...(input.approvalId === undefined ? {} : { approvalId: input.approvalId }),
        },
        { paymentId: hold.id, caller },
      );
    } catch (error) {
      await this.#follow(hold.id, await this.#outcome(walletId, hold.id));
      if (!(error instanceof ApiError)) throw error;
      const left = await this.#left(agentId);
      if (error.code === 'payment_requirements_rejected') {
        const offers = (error.details as { accepts?: Array<{ amount: string; network: string; asset: string }> } | undefined)?.accepts ?? [];
        throw agentsErrors.paymentRefused(this.#priceRefusal(offers, amount, input.maxAmount, left), left, await this.#limits(walletId), offers);
      }
      const reason = (error.details as { reason?: string } | undefined)?.reason ?? error.code;
      if (error.status === 409 && POLICY_REFUSAL.test(reason)) {
        throw agentsErrors.policyRefused(409, reason, error.message, (error.details as { rule?: unknown }).rule ?? null, left, await this.#limits(walletId));
      }
      if (error.status === 400) throw agentsErrors.paymentRefused(`${error.message}`, left, await this.#limits(walletId), null);
      throw error;
    }
    // A payment waiting on a human approval (the wallet's spend policy) signed nothing: the hold closes.
    await this.#follow(hold.id, 'approval' in result ? null : result.payment);
    return result;
  }

  /** Why a price was not paid, in the model's terms: what the resource asks against what this call may pay. */
  #priceRefusal(offers: Array<{ amount: string; network: string; asset: string }>, held: bigint, maxAmount: string | undefined, left: bigint): string {
    const { network, asset } = this.ctx.chain;
    const ours = offers.filter((o) => o.network === network && o.asset.toLowerCase() === asset.address.toLowerCase());
    if (ours.length < offers.length) return `The resource asks to be paid in an asset this agent's wallet does not pay (only ${asset.symbol} on ${network}); nothing was signed`;
    const price = ours.reduce((low, o) => (BigInt(o.amount) < low ? BigInt(o.amount) : low), BigInt(ours[0]?.amount ?? '0'));
    const cap = maxAmount !== undefined && BigInt(maxAmount) <= held ? `the maxAmount this call set (${maxAmount})` : `what this agent's payment budget has left (${left})`;
    return `The resource asks ${price} atomic units of ${asset.symbol}, more than ${cap}; nothing was signed`;
  }

  /** What the payment budget has left now (after any hold of a refused call was given back). */
  async #left(agentId: string): Promise<bigint> {
    const agent = await this.store.byId(agentId);
    const left = agent ? BigInt(agent.paymentBudget) - BigInt(agent.paymentSpent) : 0n;
    return left > 0n ? left : 0n;
  }

  /** The wallet's spend-policy limits with what each has left (empty without a policy). */
  #limits(walletId: string) {
    return this.ctx.services.walletPolicies.budget(walletId);
  }

  /**
   * The agent's wallet payments, newest first (tool payments and withdrawals), each with the turn and session
   * of the tool call that made it. An agent without a wallet has none.
   */
  async payments(agent: AgentRow, limit: number, before?: string): Promise<AgentPaymentView[]> {
    if (!agent.walletId) return [];
    const page = await this.ctx.services.wallets.payments(agent.walletId, limit, before);
    return this.#withTurns(page);
  }

  /** Every payment signed by these turns' tool calls, by turn. */
  async ofTurns(agent: AgentRow, turnIds: string[]): Promise<Map<string, AgentPaymentView[]>> {
    const byTurn = new Map<string, AgentPaymentView[]>();
    if (!agent.walletId || turnIds.length === 0) return byTurn;
    const holds = await this.store.holdsOfTurns(turnIds);
    const payments = await this.#withTurns(await this.ctx.services.wallets.paymentsByIds(agent.walletId, holds.map((h) => h.id)));
    for (const payment of payments.reverse()) {
      if (payment.turnId) byTurn.set(payment.turnId, [...(byTurn.get(payment.turnId) ?? []), payment]);
    }
    return byTurn;
  }

  async #withTurns(page: Awaited<ReturnType<AppContext['services']['wallets']['payments']>>): Promise<AgentPaymentView[]> {
    const holds = new Map((await this.store.holdsByIds(page.map((p) => p.id))).map((h) => [h.id, h]));
    const turns = new Map((await this.chats.turnsByIds([...new Set([...holds.values()].flatMap((h) => (h.turnId ? [h.turnId] : [])))])).map((t) => [t.id, t]));
    return page.map((payment) => {
      const turn = turns.get(holds.get(payment.id)?.turnId ?? '');
      return { ...payment, kind: payment.method === 'TRANSFER' ? 'withdrawal' : 'tool', turnId: turn?.id ?? null, session: turn?.session ?? null };
    });
  }

  /**
   * Sends USDG from a runtime_b agent's wallet to an address its user names (the facilitator submits it: the
   * wallet needs no gas). Not a tool payment, so the payment budget is not touched; the chain refuses more
   * than the wallet holds. Each transfer is a transaction our relayer pays gas for, so new ones pass a minimum
   * amount and a per-agent hourly rate. The order matters: a retry of a withdrawal already made is answered
   * from what it made before either limit (it sends nothing, so it is neither counted nor refused); the
   * minimum comes before the rate, so a refused amount costs no part of the hour; the key names the payment
   * only once both passed, so a refused request binds nothing to its key.
   */
  async withdraw(agent: AgentRow, input: { to: string; amount: string }, idempotencyKey: string | null, caller?: Caller) {
    if (agent.type !== 'runtime_b' || !agent.walletId || !agent.walletCredentialId) throw agentsErrors.noWallet();
    const wallet = await this.ctx.services.wallets.get(AGENTS_WALLET_OWNER, agent.walletId);
    if (wallet.address && wallet.address.toLowerCase() === input.to.toLowerCase()) throw agentsErrors.withdrawToSelf();
    if (idempotencyKey !== null) {
      const made = await this.#madeUnder(agent.walletId, await this.store.withdrawalByKey(agent.id, idempotencyKey), input);
      if (made) return { transfer: made };
    }
    await this.#admitWithdrawal(agent.id, wallet.address, BigInt(input.amount));
    let paymentId: string | undefined;
    if (idempotencyKey !== null) {
      // The key names the payment first: a retry after a lost answer gets that transfer, never a second one.
      const named = await this.store.withdrawalFor({ agentId: agent.id, idempotencyKey, paymentId: newId(), to: input.to.toLowerCase(), amount: input.amount, createdAt: this.ctx.clock.now() });
      // A copy sent at the same moment may have named and sent it since the look above.
      const made = await this.#madeUnder(agent.walletId, named, input);
      if (made) return { transfer: made };
      paymentId = named.paymentId;
    }
    return { transfer: await this.ctx.services.walletTransfer(agent.walletId, agent.walletCredentialId, input, paymentId, caller) };
  }

  /** The transfer a key's withdrawal already made (null: none yet); the key with another address or amount is refused. */
  async #madeUnder(walletId: string, named: { paymentId: string; to: string; amount: string } | null, input: { to: string; amount: string }) {
    if (!named) return null;
    if (named.to !== input.to.toLowerCase() || named.amount !== input.amount) throw agentsErrors.idempotencyKeyReused();
    return this.ctx.services.wallets.payment(walletId, named.paymentId);
  }

  /**
   * The gas guards of a new withdrawal (docs/agents.md#the-two-agent-types). Below the minimum only the whole
   * balance may leave: dust must still come out, or the agent could never be deleted (agent_wallet_not_empty).
   * The rate is counted in PostgreSQL, so every api node shares it; a refused request sends nothing.
   */
  async #admitWithdrawal(agentId: string, walletAddress: string | null, amount: bigint): Promise<void> {
    const { minAmount, perHour } = this.ctx.config.agentWithdrawals;
    if (amount < minAmount && (!walletAddress || amount !== (await this.#balanceOf(walletAddress)))) throw agentsErrors.withdrawalBelowMinimum(minAmount);
    const hit = await this.ctx.rateLimiter.hit(`agent-withdraw:${agentId}`, { limit: perHour, windowSeconds: 3600 });
    if (!hit.allowed) throw agentsErrors.withdrawalsRateLimited(perHour, hit.retryAfterSeconds);
  }

  /** The payment signed under a hold, as the wallet recorded it; null: nothing was signed. */
  #outcome(walletId: string, holdId: string): Promise<Outcome> {
    return this.ctx.services.wallets.payment(walletId, holdId);
  }

  /** Moves a hold after its payment: closed when final (or never signed), else shrunk to what was signed. */
  async #follow(holdId: string, payment: Outcome): Promise<void> {
    const now = this.ctx.clock.now();
    if (!payment) return void (await this.store.closeHold(holdId, 0n, now));
    if (payment.status === 'settled') return void (await this.store.closeHold(holdId, BigInt(payment.amount), now));
    if (payment.status === 'failed') return void (await this.store.closeHold(holdId, 0n, now));
    await this.store.shrinkHold(holdId, BigInt(payment.amount), now);
  }

  /**
   * Closes the holds whose payment became final, and those never signed, paging through every open hold. A
   * hold of a call still in flight is safe to look at: each move happens once, whoever makes it first.
   */
  async sweepHolds(): Promise<void> {
    const now = this.ctx.clock.now();
    for (let after: string | null = null, page: HoldRow[]; (page = await this.store.openHolds(after, 100)).length > 0; after = page.at(-1)!.id) {
      for (const hold of page) {
        const payment = await this.#outcome(hold.walletId, hold.id);
        if (payment || unsignedForGood(hold, now)) await this.#follow(hold.id, payment);
      }
    }
  }

  /** Whether the agent's wallet still has anything in it or in flight (a deletion would strand it). */
  async holdsMoney(agent: AgentRow): Promise<boolean> {
    if (!agent.walletId) return false;
    const [wallet, totals] = await Promise.all([this.ctx.services.wallets.get(AGENTS_WALLET_OWNER, agent.walletId), this.store.paymentTotals(agent.id)]);
    if (totals.held !== '0') return true;
    return !!wallet.address && (await this.#balanceOf(wallet.address)) > 0n;
  }

  /** The USDG an address holds on chain now (atomic units). */
  #balanceOf(address: string): Promise<bigint> {
    return this.ctx.chain.publicClient.readContract({ address: this.ctx.chain.asset.address as Address, abi: erc20Abi, functionName: 'balanceOf', args: [address as Address] });
  }
}

const unsignedForGood = (hold: HoldRow, now: Date) => now.getTime() - hold.createdAt.getTime() >= UNSIGNED_AFTER_MS;

export const holdsLoop = (payments: AgentPayments): BackgroundLoop => ({ name: 'agents.payment-holds', intervalMs: 5_000, leader: true, run: () => payments.sweepHolds() });

function sameToken(expected: string, presented: string): boolean {
  const [a, b] = [Buffer.from(expected), Buffer.from(presented)];
  return a.length === b.length && timingSafeEqual(a, b);
}
