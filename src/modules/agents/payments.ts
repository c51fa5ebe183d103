import { timingSafeEqual } from 'node:crypto';
import { erc20Abi, type Address } from 'viem';
import type { AppContext } from '../../context.js';
import { ApiError, unauthorized } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import type { AgentSecrets } from './agent-secrets.js';
import { agentsErrors } from './errors.js';
import { AGENTS_WALLET_OWNER } from './deployer.js';
import type { AgentRow, AgentsStore, HoldRow } from './store.js';

export interface ToolPayment {
  url: string;
  method: 'GET' | 'POST';
  body?: unknown;
  /** At most this much for this call (atomic units); the remaining budget when absent. */
  maxAmount?: string;
}

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
    private readonly secrets: AgentSecrets,
  ) {}

  async pay(agentId: string, presentedToken: string, input: ToolPayment) {
    const agent = await this.store.byId(agentId);
    const instance = agent && (await this.store.instanceOf(agentId));
    // Only the agent's current runtime: its token opens from the instance row.
    if (!agent || !instance || !sameToken(this.secrets.open(instance.id, instance.sealedToken), presentedToken)) throw unauthorized();
    if (agent.status !== 'running') throw agentsErrors.notRunning(agent.status);
    if (agent.type !== 'runtime_b' || !agent.walletId || !agent.walletCredentialId) throw agentsErrors.noWallet();

    const remaining = BigInt(agent.paymentBudget) - BigInt(agent.paymentSpent);
    const asked = input.maxAmount === undefined ? remaining : BigInt(input.maxAmount);
    const amount = asked < remaining ? asked : remaining;
    const hold = { id: newId(), agentId, walletId: agent.walletId, amount };
    if (amount <= 0n || !(await this.store.openHold(hold, this.ctx.clock.now()))) throw agentsErrors.paymentBudgetExhausted(remaining < 0n ? 0n : remaining);
    let result;
    try {
      result = await this.ctx.services.walletPayAndCall(
        agent.walletId,
        agent.walletCredentialId,
        { url: input.url, method: input.method, body: input.body, maxPayment: { network: this.ctx.chain.network, asset: this.ctx.chain.asset.address, amount: amount.toString() } },
        hold.id,
      );
    } catch (error) {
      await this.#follow(hold.id, await this.#outcome(hold.walletId, hold.id));
      if (error instanceof ApiError && error.status === 400) throw agentsErrors.paymentRefused(error.message, error.details);
      throw error;
    }
    // A payment waiting on a human approval (the wallet's spend policy) signed nothing: the hold closes.
    await this.#follow(hold.id, 'approval' in result ? null : result.payment);
    return result;
  }

  /**
   * Sends USDG from a runtime_b agent's wallet to an address its user names (the facilitator submits it: the
   * wallet needs no gas). Not a tool payment, so the payment budget is not touched; the chain refuses more
   * than the wallet holds.
   */
  async withdraw(agent: AgentRow, input: { to: string; amount: string }, idempotencyKey: string | null) {
    if (agent.type !== 'runtime_b' || !agent.walletId || !agent.walletCredentialId) throw agentsErrors.noWallet();
    const wallet = await this.ctx.services.wallets.get(AGENTS_WALLET_OWNER, agent.walletId);
    if (wallet.address && wallet.address.toLowerCase() === input.to.toLowerCase()) throw agentsErrors.withdrawToSelf();
    let paymentId: string | undefined;
    if (idempotencyKey !== null) {
      // The key names the payment first: a retry after a lost answer gets that transfer, never a second one.
      const named = await this.store.withdrawalFor({ agentId: agent.id, idempotencyKey, paymentId: newId(), to: input.to.toLowerCase(), amount: input.amount, createdAt: this.ctx.clock.now() });
      if (named.to !== input.to.toLowerCase() || named.amount !== input.amount) throw agentsErrors.idempotencyKeyReused();
      const earlier = await this.ctx.services.wallets.payment(agent.walletId, named.paymentId);
      if (earlier) return { transfer: earlier };
      paymentId = named.paymentId;
    }
    return { transfer: await this.ctx.services.walletTransfer(agent.walletId, agent.walletCredentialId, input, paymentId) };
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
    if (!wallet.address) return false;
    const balance = await this.ctx.chain.publicClient.readContract({ address: this.ctx.chain.asset.address as Address, abi: erc20Abi, functionName: 'balanceOf', args: [wallet.address as Address] });
    return balance > 0n;
  }
}

const unsignedForGood = (hold: HoldRow, now: Date) => now.getTime() - hold.createdAt.getTime() >= UNSIGNED_AFTER_MS;

export const holdsLoop = (payments: AgentPayments): BackgroundLoop => ({ name: 'agents.payment-holds', intervalMs: 5_000, leader: true, run: () => payments.sweepHolds() });

function sameToken(expected: string, presented: string): boolean {
  const [a, b] = [Buffer.from(expected), Buffer.from(presented)];
  return a.length === b.length && timingSafeEqual(a, b);
}
