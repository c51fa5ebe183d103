import { timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { ApiError, unauthorized } from '../../platform/http/errors.js';
import type { AgentSecrets } from './agent-secrets.js';
import { agentsErrors } from './errors.js';
import type { AgentsStore } from './store.js';

export interface ToolPayment {
  url: string;
  method: 'GET' | 'POST';
  body?: unknown;
  /** At most this much for this call (atomic units); the remaining budget when absent. */
  maxAmount?: string;
}

/**
 * runtime_b's tool: pay-and-call from the agent's own wallet, within the budget its user set. Enforced here,
 * not in the runtime: the runtime holds no wallet credential, only its token for this route. Each call holds
 * its maximum from the budget first (one conditional UPDATE, so concurrent calls never hold more than is
 * left), pays through the wallet's pay-and-call with that maximum, then gives back what was not paid. A
 * payment whose outcome is not final (pending, unknown) keeps its amount held; a failure after which the
 * payment may have been sent keeps the whole hold.
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
    const hold = asked < remaining ? asked : remaining;
    if (hold <= 0n || !(await this.store.reservePayment(agentId, hold))) throw agentsErrors.paymentBudgetExhausted(remaining < 0n ? 0n : remaining);
    let paid = 0n;
    try {
      const result = await this.ctx.services.walletPayAndCall(agent.walletId, agent.walletCredentialId, {
        url: input.url,
        method: input.method,
        body: input.body,
        maxPayment: { network: this.ctx.chain.network, asset: this.ctx.chain.asset.address, amount: hold.toString() },
      });
      if (result.payment && result.payment.status !== 'failed') paid = BigInt(result.payment.amount);
      return result;
    } catch (error) {
      // Refused before signing (price above the hold, a URL the guard refuses): nothing was paid. Any other
      // failure may come after the payment was sent: the hold stays, as for an unknown outcome.
      if (error instanceof ApiError && error.status === 400) throw agentsErrors.paymentRefused(error.message, error.details);
      paid = hold;
      throw error;
    } finally {
      await this.store.releasePayment(agentId, hold - paid);
    }
  }
}

function sameToken(expected: string, presented: string): boolean {
  const [a, b] = [Buffer.from(expected), Buffer.from(presented)];
  return a.length === b.length && timingSafeEqual(a, b);
}
