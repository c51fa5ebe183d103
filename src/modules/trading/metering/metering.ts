import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../platform/http/errors.js';
import { newId } from '../../../platform/ids.js';
import { settlementRecordOf } from './charge-reconcile.js';
import { isPricedFor } from './access.js';
import type { ChargeRow, ChargeStore } from './charge-store.js';
import type { StrategyRow } from '../store.js';
import type { ChargeBoundary } from '../tables.js';

/** Who pays: the account (its agent wallet) a charge is made from, for one of its runtimes (none: a backtest's access). */
export interface Payer {
  accountId: string;
  walletId: string;
  runtimeId: string | null;
}

export type ChargeOutcome =
  /** Paid now or before (charge), or free (null). */
  | { kind: 'paid'; charge: ChargeRow | null }
  /** Refused for good (no funds, a wallet that cannot pay): nothing moved. */
  | { kind: 'refused'; reason: string }
  /** Not decided yet (a settle outcome unknown, the facilitator away): try again later; it is never paid twice. */
  | { kind: 'pending'; reason: string };

/** Dollars of USDG ("0.01") in atomic units. */
export function atomicOf(usd: string | null, decimals: number): bigint {
  if (!usd) return 0n;
  const [whole, fraction = ''] = usd.split('.');
  return BigInt(whole!) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0').slice(0, decimals) || '0');
}

/**
 * Trading's optional x402 metering at the spec's four boundaries, each off unless priced. The agent
 * wallet of the runtime's account pays: the wallet provider signs an EIP-3009 authorization for the
 * challenge and the facilitator settles it, so money moves on chain like any x402 payment. A thing is
 * paid once: the charge row (one per account, boundary and subject) is claimed before the settle, a
 * retry finds it settled, and a charge whose settle outcome is unknown stays `settling` until the
 * reconciler reads the chain. A refusal leaves the row `failed`, to be taken over by a later attempt.
 */
export class Meter {
  readonly prices: Readonly<Record<'activation' | 'execution' | 'marketData', bigint>>;

  constructor(
    private readonly ctx: AppContext,
    private readonly store: ChargeStore,
    private readonly payTo: string | null,
  ) {
    const { pricesUsd } = ctx.config.trading.metering;
    const decimals = ctx.x402.asset.decimals;
    this.prices = { activation: atomicOf(pricesUsd.activation, decimals), execution: atomicOf(pricesUsd.execution, decimals), marketData: atomicOf(pricesUsd.marketData, decimals) };
    if (!payTo && Object.values(this.prices).some((price) => price > 0n)) throw new Error('TRADING_PRICE_* needs TRADING_METERING_PAY_TO (the address metered payments go to)');
  }

  /** Strategy access (another owner's priced strategy, once per account) and activation, before a runtime goes active. */
  async forActivation(payer: Payer & { runtimeId: string }, runtimeUserId: string, strategy: StrategyRow): Promise<ChargeOutcome> {
    const access = await this.forAccess(payer, runtimeUserId, strategy);
    if (access.kind !== 'paid') return access;
    return this.charge(payer, 'activation', `runtime:${payer.runtimeId}`, this.prices.activation, this.payTo, 'Activation of a trading runtime', `/agentic-trading/runtimes/${payer.runtimeId}`);
  }

  /**
   * Strategy access, before a runtime of another owner's priced strategy goes active or a backtest of it runs:
   * one charge per account and strategy (whichever comes first pays; the other finds it settled). Free for
   * the owner and for a free strategy.
   */
  async forAccess(payer: Payer, userId: string, strategy: StrategyRow): Promise<ChargeOutcome> {
    if (!isPricedFor(strategy, userId)) return { kind: 'paid', charge: null };
    const price = atomicOf(strategy.accessPriceUsd, this.ctx.x402.asset.decimals);
    return this.charge(payer, 'strategy_access', `strategy:${strategy.id}`, price, strategy.accessPayTo, `Access to the trading strategy "${strategy.name}"`, `/agentic-trading/strategies/${strategy.id}`);
  }

  /** The tick's market data, then its execution, before it runs. */
  async forTick(payer: Payer & { runtimeId: string }, trigger: string, scheduledAt: Date, feed: string): Promise<ChargeOutcome> {
    const subject = `tick:${payer.runtimeId}:${trigger}:${scheduledAt.toISOString()}`;
    const data = await this.charge(payer, 'market_data', subject, this.prices.marketData, this.payTo, `Market data (${feed}) for one trading tick`, `/agentic-trading/runtimes/${payer.runtimeId}`);
    if (data.kind !== 'paid') return data;
    return this.charge(payer, 'execution', subject, this.prices.execution, this.payTo, 'One trading execution', `/agentic-trading/runtimes/${payer.runtimeId}`);
  }

  get metersTicks(): boolean {
    return this.prices.execution > 0n || this.prices.marketData > 0n;
  }

  /** One thing paid once; `resource` is the api path the x402 challenge names as what is bought. */
  async charge(payer: Payer, boundary: ChargeBoundary, subject: string, amount: bigint, payTo: string | null, description: string, resource: string): Promise<ChargeOutcome> {
    if (amount <= 0n || !payTo) return { kind: 'paid', charge: null };
    const earlier = await this.store.find(payer.accountId, boundary, subject);
    if (earlier && earlier.status !== 'failed') return settledOrPending(earlier);

    const url = `${this.ctx.urls.api}${resource}`;
    const challenge = this.ctx.x402.paymentRequired({ url, description, mimeType: 'application/json', amount: amount.toString(), payTo });
    const requirement = challenge.accepts[0]!;
    let signed;
    try {
      signed = await this.ctx.services.walletSignPayment(payer.walletId, challenge, requirement);
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) return { kind: 'refused', reason: 'wallet_not_active' };
      throw error;
    }
    const now = this.ctx.clock.now();
    const authorization = signed.payload.payload as { authorization: { from: string } };
    const claimed = await this.store.claim({
      id: newId(now.getTime()),
      accountId: payer.accountId,
      runtimeId: payer.runtimeId,
      boundary,
      subject,
      amountAtomic: requirement.amount,
      payTo: requirement.payTo.toLowerCase(),
      network: requirement.network,
      asset: requirement.asset.toLowerCase(),
      payer: authorization.authorization.from.toLowerCase(),
      nonce: signed.nonce.toLowerCase(),
      validBefore: signed.validBefore,
      status: 'settling',
      reason: null,
      transactionHash: null,
      createdAt: now,
      updatedAt: now,
    });
    // Another attempt holds it: its signature is the one that counts; ours is never sent.
    if (!claimed) return settledOrPending((await this.store.find(payer.accountId, boundary, subject))!);

    let outcome;
    try {
      outcome = await this.ctx.x402.settle(signed.payload, requirement, settlementRecordOf(claimed.id, claimed.nonce));
    } catch (error) {
      this.ctx.log.error({ err: error, chargeId: claimed.id }, 'metered settle threw; the charge stays settling for reconciliation');
      return { kind: 'pending', reason: 'settlement_unknown' };
    }
    const at = this.ctx.clock.now();
    switch (outcome.kind) {
      case 'settled':
        await this.store.finish(claimed.id, { status: 'settled', transactionHash: outcome.transaction.toLowerCase() }, at);
        return { kind: 'paid', charge: { ...claimed, status: 'settled', transactionHash: outcome.transaction.toLowerCase() } };
      case 'failed':
        await this.store.finish(claimed.id, { status: 'failed', reason: outcome.reason }, at);
        return { kind: 'refused', reason: outcome.reason };
      case 'unavailable':
        // Nothing reached the chain: the row is free for the next attempt.
        await this.store.finish(claimed.id, { status: 'failed', reason: 'facilitator_unavailable' }, at);
        return { kind: 'pending', reason: 'facilitator_unavailable' };
      case 'unknown':
        return { kind: 'pending', reason: 'settlement_unknown' };
    }
  }
}

function settledOrPending(charge: ChargeRow): ChargeOutcome {
  return charge.status === 'settled' ? { kind: 'paid', charge } : { kind: 'pending', reason: 'settlement_in_progress' };
}
