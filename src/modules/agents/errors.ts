import { ApiError } from '../../platform/http/errors.js';

// Agents answer in the envelope family; `data.reason` names the condition.
const fail = (status: number, reason: string, message: string, extra?: Record<string, unknown>, headers?: Record<string, string>) =>
  new ApiError(status, reason, message, { reason, ...extra }, headers);

export const agentsErrors = {
  notFound: () => fail(404, 'agent_not_found', 'No such agent for this user'),
  notRunning: (status: string) => fail(409, 'agent_not_running', `The agent's runtime is not running (agent ${status}); pending agents are being deployed`, { status }),
  cannot: (action: string, status: string, why: string) => fail(409, 'agent_state_conflict', `Cannot ${action} this agent (${status}): ${why}`, { status }),
  sessionNotFound: () => fail(404, 'session_not_found', 'No such session for this agent'),
  dataRemoved: (removedAt: Date) => fail(410, 'agent_data_removed', `The agent's volume and histories were removed at ${removedAt.toISOString()}`, { removedAt: removedAt.toISOString() }),
  runtimeUnavailable: () => fail(503, 'runtime_unavailable', 'The agent runtime is restarting; retry shortly'),
  serviceStopping: () => fail(503, 'service_stopping', 'The service is shutting down: the turn was stopped and is kept in the history as failed; send it again'),
  providerNotFound: (provider: string) => fail(404, 'provider_not_found', `No ${provider} key is set for this agent`),
  turnNotRunning: () => fail(409, 'turn_not_running', 'The turn this payment was asked for has ended; nothing was paid'),
  providerNotConfigured: () => fail(409, 'provider_not_configured', 'Configure a model provider for this agent first (PUT /agents/{agentId}/providers)'),
  /** Retry-After: the seconds until the UTC day turns and the budget is fresh. */
  tokenBudgetExhausted: (budget: { dailyTokens: number; usedToday: number; resetsAt: string }, now: Date) =>
    fail(429, 'token_budget_exhausted', "The agent's daily token budget is spent; it resets at the start of the next UTC day", budget, {
      'retry-after': String(Math.max(1, Math.ceil((new Date(budget.resetsAt).getTime() - now.getTime()) / 1000))),
    }),
  idempotencyKeyReused: () => fail(409, 'idempotency_key_reused', 'This Idempotency-Key already sent another withdrawal (another address or amount)'),
  invalidIdempotencyKey: () => fail(400, 'invalid_idempotency_key', 'Idempotency-Key must be 8 to 200 printable ASCII characters'),
  withdrawToSelf: () => fail(400, 'invalid_request', "Withdraw to another address than the agent's own wallet"),
  withdrawalBelowMinimum: (minAmount: bigint) =>
    fail(400, 'withdrawal_below_minimum', `Withdraw at least ${minAmount} atomic units, or the wallet's whole balance`, { minAmount: minAmount.toString() }),
  /** Retry-After: the seconds until the agent's hourly window turns. Nothing was sent. */
  withdrawalsRateLimited: (limit: number, retryAfterSeconds: number) =>
    fail(429, 'rate_limited', `At most ${limit} withdrawals per agent per hour; nothing was sent`, { limit, windowSeconds: 3600, retryAfterSeconds }, { 'retry-after': String(retryAfterSeconds) }),
  walletNotEmpty: () => fail(409, 'agent_wallet_not_empty', "The agent's wallet holds USDG or a payment in flight: withdraw it first (POST /agents/{agentId}/wallet/withdraw)"),
  noWallet: () => fail(409, 'agent_has_no_wallet', 'Only runtime_b agents pay, from the wallet their deployment gives them'),
  paymentBudgetExhausted: (remaining: bigint, limits: unknown) =>
    fail(402, 'payment_budget_exhausted', `The agent's payment budget does not cover this call (${remaining} left); nothing was signed`, { remaining: remaining.toString(), limits }),
  /** The price is above what may be paid (the budget left, or the call's own maxAmount); `offers`: what the resource asked. */
  paymentRefused: (message: string, remaining: bigint, limits: unknown, offers: unknown) => fail(400, 'payment_refused', message, { remaining: remaining.toString(), limits, offers }),
  /** The wallet's spend policy refused (its reason and rule, as the wallet answers them); nothing was signed. */
  policyRefused: (status: number, reason: string, message: string, rule: unknown, remaining: bigint, limits: unknown) => fail(status, reason, message, { rule, remaining: remaining.toString(), limits }),
  budgetBelowSpent: (spent: string) => fail(409, 'budget_below_spent', `The payment budget cannot be set below what was already spent (${spent})`, { spent }),
  turnTokenCapReached: (maxTokens: number) =>
    fail(413, 'turn_token_cap_reached', `This paid turn's token cap (${maxTokens}) cannot cover its next model call: send a shorter conversation`, { maxTokens }),
  chatNotForSale: () => fail(404, 'agent_not_found', 'No such agent sells chat'),
  permitTooShort: (minSeconds: number) =>
    fail(400, 'permit_too_short', `The permit must stay valid at least ${minSeconds} s after it arrives (a turn runs, then settles); sign one with a later deadline`, { minSeconds }),
  paidTurnPays: () => fail(409, 'paid_turn_pays_nothing', "A turn sold per token never pays from the agent's wallet; nothing was paid"),
  maximumBelowMinimum: (minimum: bigint) =>
    fail(400, 'price_below_minimum', `pricePer1kTokens × maxTokensPerTurn / 1000 must be at least ${minimum} atomic units, the least a payment settles`, { minAmount: minimum.toString() }),
  paidTurnInProgress: () => fail(409, 'paid_turn_in_progress', 'This payment is running its turn; send it again shortly for the answer', undefined, { 'retry-after': '5' }),
  payToRequired: () => fail(400, 'pay_to_required', 'A runtime_a agent has no wallet: name the payTo address its chats are paid to'),
  providerFailed: (message: string, providerStatus: number | null) => fail(502, 'provider_failed', message, { providerStatus }),
};
