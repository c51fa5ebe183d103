// batch-settlement sweeps (`settle(receiver, token)`): move what was claimed for a receiver to it. One sweep per
// (receiver, token) in this process at a time (a second would move nothing and still cost gas); nothing is sent
// when nothing claimed is waiting, or less than the minimum; paid only where its Settled event says so.
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { encodeFunctionData, getAddress, isAddressEqual, type Address, type Hash, type Log } from 'viem';
import { ChainUnavailableError } from '../../../chain/errors.js';
import { BATCH_SETTLEMENT } from '../../../chain/x402-contracts.js';
import { chainReads, failure } from '../answers.js';
import { newCallContext, runInCall } from '../call-context.js';
import { GasCeilingError } from '../gas-ceiling.js';
import { ownWords, Reason } from '../reasons.js';
import { BroadcastUncertainError } from '../sender.js';
import { batchAbi, sweptBy } from './chain.js';
import { sweepSchema } from './payload.js';
import { Err, type BatchPorts } from './shared.js';

export class BatchSweeps {
  /** Sweeps this process is sending, per (receiver, token): a second one would move nothing and still cost gas. */
  readonly #running = new Map<string, Promise<SettleResponse>>();

  constructor(private readonly ports: BatchPorts) {}

  async settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const network = requirements.network;
    const parsed = sweepSchema.safeParse(payload.payload);
    if (!parsed.success) return failure(network, Err.payloadType, 'payload must be {type: "settle", receiver, token}');
    const receiver = getAddress(parsed.data.receiver);
    const token = getAddress(parsed.data.token);
    if (!isAddressEqual(receiver, requirements.payTo as Address) || !isAddressEqual(token, requirements.asset as Address)) {
      return failure(network, Reason.invalidPaymentRequirements, 'a sweep pays the requirements’ payTo in their asset');
    }
    const id = `${receiver}|${token}`;
    const running = this.#running.get(id);
    if (running) {
      await running.catch(() => undefined);
      return this.settle(payload, requirements);
    }
    const sweeping = this.#sendSweep(receiver, token, network);
    this.#running.set(id, sweeping);
    try {
      return await sweeping;
    } finally {
      this.#running.delete(id);
    }
  }

  async #sendSweep(receiver: Address, token: Address, network: string): Promise<SettleResponse> {
    const [claimed, settled] = await chainReads(() => this.ports.client.readContract({ address: BATCH_SETTLEMENT, abi: batchAbi, functionName: 'receivers', args: [receiver, token] }));
    const pending = claimed - settled;
    if (pending === 0n) return failure(network, Err.nothingToSettle, 'nothing claimed is waiting to be settled for this receiver and token');
    const minimum = this.ports.policy?.options.minSettleAmount ?? 0n;
    if (pending < minimum) return failure(network, Reason.invalidPaymentRequirements, `${pending} is below this facilitator's minimum of ${minimum}: claim more first`);
    await this.ports.gasFloat.require('own');
    await this.ports.policy?.charge(receiver, receiver);
    const data = encodeFunctionData({ abi: batchAbi, functionName: 'settle', args: [receiver, token] });
    const call = newCallContext();
    let hash: Hash;
    try {
      hash = await runInCall(call, () => this.ports.signer.sendSettlement({ to: BATCH_SETTLEMENT, data, payer: receiver, alone: true, ceiling: this.ports.maxGas }));
    } catch (error) {
      if (error instanceof BroadcastUncertainError) return failure(network, Reason.settlementPending, 'the sweep may have been sent; its outcome is on chain', undefined, error.hash);
      if (call.gasRefusal || error instanceof GasCeilingError) return failure(network, Reason.gasOverCeiling, ownWords(Reason.gasOverCeiling));
      if (call.rpcFailure || call.sendFailure) throw new ChainUnavailableError(call.rpcFailure ?? call.sendFailure);
      return failure(network, 'invalid_batch_settlement_evm_settle_simulation_failed', 'the sweep would revert; nothing was sent');
    }
    try {
      const mined = await this.ports.signer.waitForTransactionReceipt({ hash });
      const swept = sweptBy({ status: mined.status, logs: (mined as { logs?: readonly Log[] }).logs ?? [] }, receiver, token);
      if (!swept) return failure(network, Err.nothingToSettle, 'the sweep moved nothing (another sweep moved it first)', undefined, hash);
      return { success: true, transaction: hash, network: network as `${string}:${string}`, amount: swept.amount.toString() };
    } catch {
      return failure(network, Reason.settlementPending, 'sweep sent; outcome not known yet', undefined, hash);
    }
  }
}
