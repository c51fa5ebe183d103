// Sweeps: what a deposit address received goes on to the merchant's payTo, as an EIP-3009 authorization signed by
// the deposit key and settled by our facilitator (its settle policy, gas ceiling and relayer pay for it), so the
// deposit address never needs ETH. Each step in the order that keeps it crash-safe:
// 1. choose the authorization's nonce and window and record the sweep (`sending`) before anything is signed: at
//    most one sweep per deposit is in flight, and a crash from here on leaves a row to decide from the chain;
// 2. sign, then settle under the sweep's own record name (its retries and the chain claim agree on it);
// 3. settled → the amount counts as swept; refused or never sent → failed (nothing moved), tried again later;
//    unknown → left `sending` for reconcileSending, which asks the chain what became of that one authorization.
import type { PaymentRequirements } from '@x402/core/types';
import { erc20Abi, getAddress, type Address } from 'viem';
import { authorizationOutcome } from '../../chain/payment-check.js';
import type { AppContext } from '../../context.js';
import { crashPoint } from '../../platform/crash-points.js';
import { newId } from '../../platform/ids.js';
import { signPayment } from '../../x402/client.js';
import { planAuthorization, type ShortLivedValidity } from '../../x402/short-lived-scheme.js';
import type { Deposits } from './deposits.js';
import type { DepositRow, SweepRow } from './deposit-store.js';

/**
 * How long a sweep's authorization is valid. Our facilitator executes it at once (it needs only to be mined before
 * then, not final); a sweep a crash left undecided and unused is known dead this soon, and the next one goes out.
 */
const SWEEP_AUTHORIZATION_SECONDS = 60;
/** After a refused (or unsendable) sweep, the deposit waits this long before the next try. */
const RETRY_AFTER_SECONDS = 60;
/** How far back the reconciler looks for the transaction that used a sweep's authorization. */
const LOOKBACK_BLOCKS = 10_000n;

export const sweepRecordOf = (sweepId: string) => `intents:sweep:${sweepId}`;

export type SweepResult = 'settled' | 'failed' | 'unknown' | 'skipped';

export class DepositSweeper {
  constructor(
    private readonly ctx: AppContext,
    private readonly deposits: Deposits,
  ) {}

  /** Sweeps up to `limit` deposits that hold more than they passed on; how many it tried. */
  async sweepDue(limit: number): Promise<number> {
    const due = await this.deposits.store.unswept(limit);
    for (const deposit of due) {
      try {
        await this.sweep(deposit);
      } catch (error) {
        this.ctx.log.warn({ err: error, intentId: deposit.intentId }, 'deposit sweep failed; it is tried again');
      }
    }
    return due.length;
  }

  async sweep(deposit: DepositRow & { payTo: string }): Promise<SweepResult> {
    const { ctx } = this;
    const store = this.deposits.store;
    const now = ctx.clock.now();
    const asset = ctx.chain.asset;
    // What it received less what went on; never more than it holds now (a transfer the watcher has not credited
    // yet waits for the next sweep).
    const balance = await ctx.chain.publicClient.readContract({ address: asset.address, abi: erc20Abi, functionName: 'balanceOf', args: [deposit.address as Address] });
    const owed = BigInt(deposit.received) - BigInt(deposit.swept);
    const amount = owed < balance ? owed : balance;
    if (amount < ctx.config.facilitatorLimits.minSettleAmount) {
      // Dust below what the facilitator settles stays where it is; it is looked at again later.
      await store.sweepLater(deposit.intentId, new Date(now.getTime() + RETRY_AFTER_SECONDS * 1000));
      return 'skipped';
    }
    const sealed = await store.sealedSeed(deposit.projectId);
    if (!sealed) throw new Error(`deposit ${deposit.address} has no project key`);
    const account = this.deposits.keys.account(sealed, deposit.projectId, deposit.intentId);
    if (account.address !== getAddress(deposit.address)) throw new Error(`deposit ${deposit.address} does not derive from its project's key`);

    const challenge = ctx.x402.paymentRequired({
      url: `${ctx.urls.api}/v1/payment-intents/${deposit.intentId}/pay`,
      description: `Sweep of the deposit address of payment intent ${deposit.intentId}`,
      mimeType: 'application/json',
      amount: amount.toString(),
      payTo: deposit.payTo,
    });
    const requirement: PaymentRequirements = challenge.accepts[0]!;
    const validity: ShortLivedValidity = { chainTime: ctx.chain.blockTime, maxSeconds: SWEEP_AUTHORIZATION_SECONDS };
    const planned = await planAuthorization(validity, requirement);
    const id = newId();
    // 1. Recorded before it is signed; another sweep of this deposit in flight (a second leader) wins.
    const recorded = await store.insertSweep({
      id,
      intentId: deposit.intentId,
      from: account.address,
      payTo: getAddress(deposit.payTo),
      amount: amount.toString(),
      nonce: planned.nonce.toLowerCase(),
      validBefore: Number(planned.validBefore),
      createdAt: now,
    });
    if (!recorded) return 'skipped';
    crashPoint('sweep.after-record');
    // 2. Signed for exactly the recorded nonce and window, and settled under the sweep's record name.
    const { payload } = await signPayment(account, { ...challenge, accepts: [requirement] }, {
      allow: [{ network: requirement.network, asset: requirement.asset, maxAmountPerPayment: requirement.amount }],
      validity: { ...validity, planned },
    });
    let outcome: Awaited<ReturnType<AppContext['x402']['settle']>>;
    try {
      outcome = await ctx.x402.settle(payload, requirement, sweepRecordOf(id));
      crashPoint('sweep.after-settle');
    } catch (error) {
      outcome = { kind: 'unknown', transaction: null, message: String(error) };
    }
    // 3. What the facilitator said.
    const at = ctx.clock.now();
    switch (outcome.kind) {
      case 'settled':
        await store.sweepSettled(id, outcome.transaction.toLowerCase(), at);
        return 'settled';
      case 'failed':
      case 'unavailable': {
        const error = outcome.kind === 'failed' ? outcome.reason : `facilitator_unavailable: ${outcome.message}`;
        this.ctx.log.warn({ intentId: deposit.intentId, error }, 'deposit sweep refused; nothing moved, tried again later');
        await store.sweepFailed(id, error, new Date(at.getTime() + RETRY_AFTER_SECONDS * 1000), at);
        return 'failed';
      }
      case 'unknown':
        await store.noteSweep(id, { transactionHash: outcome.transaction?.toLowerCase() ?? null, error: outcome.message }, at);
        return 'unknown';
    }
  }

  /**
   * Decides sweeps left `sending` since before `graceSeconds` ago (a crash, a lost answer) from the chain: its own
   * transfer paid exactly the sweep → settled (claimed under its record name); unused past validBefore → failed,
   * nothing moved; otherwise it waits. Returns how many it looked at.
   */
  async reconcileSending(graceSeconds: number, limit: number): Promise<number> {
    const { ctx } = this;
    const store = this.deposits.store;
    const open = await store.sendingSince(new Date(ctx.clock.now().getTime() - graceSeconds * 1000), limit);
    for (const sweep of open) {
      try {
        await this.reconcile(sweep);
      } catch (error) {
        ctx.log.warn({ err: error, sweepId: sweep.id }, 'sweep reconciliation could not read the chain');
      }
    }
    return open.length;
  }

  private async reconcile(sweep: SweepRow): Promise<void> {
    const { ctx } = this;
    const expected = { asset: ctx.chain.asset.address, payer: sweep.from, nonce: sweep.nonce, payTo: sweep.payTo, amount: sweep.amount };
    const outcome = await authorizationOutcome(ctx.chain.publicClient, expected, BigInt(sweep.validBefore), LOOKBACK_BLOCKS, ctx.config.txapi.confirmations);
    const now = ctx.clock.now();
    if (outcome.kind === 'paid') {
      if (await ctx.x402.claimPayment(sweepRecordOf(sweep.id), expected, { transactionHash: outcome.transactionHash, logIndex: outcome.logIndex })) {
        await this.deposits.store.sweepSettled(sweep.id, outcome.transactionHash.toLowerCase(), now);
      }
    } else if (outcome.kind === 'dead') {
      await this.deposits.store.sweepFailed(sweep.id, 'authorization_expired', now, now);
    } else if (outcome.kind === 'spent') {
      // The signature names payTo and amount, so this cannot be; say it loudly and leave it for an operator.
      ctx.log.error({ sweepId: sweep.id, transaction: outcome.transactionHash }, 'a sweep authorization was used by a transfer that is not the sweep');
    }
  }
}
