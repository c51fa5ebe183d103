// The verify of an `exact` EIP-3009 payment, the facilitator's own scheme (Permit2 and batch-settlement verify in
// their folders). Cheapest first: the request alone (precheck, the settle policy's terms), the authorization's
// window at the chain's time, then the quick check's simulation, and the SDK's exact scheme verify (precise reason
// codes) only when that cannot decide. A payer with code is refused, or held to the gas ceiling when the operator
// allows contract payers. The settle path (settle.ts) asks the same questions through this class before it claims.
import type { x402Facilitator } from '@x402/core/facilitator';
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { getAddress, type Address, type PublicClient } from 'viem';
import type { BlockClock } from '../../chain/block-clock.js';
import { eip3009Abi } from '../../chain/eip3009.js';
import { ChainUnavailableError, isTransportError } from '../../chain/errors.js';
import type { Eip3009Payload } from '../payload.js';
import { timeBounds, type Refusal } from './bounds.js';
import { newCallContext, runInCall } from './call-context.js';
import { gasWithin, GasCeilingError } from './gas-ceiling.js';
import { keyString, type SettlementKey } from './ledger.js';
import type { ContractPayers, PayerCode } from './payer-code.js';
import { precheck } from './precheck.js';
import { QuickChecker, settlementCallData, type QuickCheck } from './quick-check.js';
import { ownWords, Reason } from './reasons.js';
import type { SettlePolicy } from './settle-policy.js';

/** What the facilitator lends the verify: its parts. */
export interface VerifyPorts {
  network: string;
  client: PublicClient;
  /** The SDK facilitator with the exact scheme registered: its verify, run here inside a call context. */
  sdk: Pick<x402Facilitator, 'verify'>;
  blockTime: BlockClock;
  payerCode: PayerCode;
  contractPayers: ContractPayers;
  policy: SettlePolicy | null;
  /** FACILITATOR_MAX_SETTLE_GAS: a contract payer's settle must fit under it. */
  maxSettleGas: bigint;
  relayers: () => Address[];
  /** Settles running in this process, by key: a payment being settled is already used to a verify. */
  inflight: ReadonlyMap<string, Promise<SettleResponse>>;
}

export class ExactVerifier {
  readonly #assetsWithCode = new Set<string>();
  readonly #quickChecker: QuickChecker;

  constructor(private readonly ports: VerifyPorts) {
    this.#quickChecker = new QuickChecker(ports.client, (asset) => this.#assetHasCode(asset));
  }

  async verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    const pre = precheck(this.ports.network, payload, requirements);
    if (!pre.ok) return { isValid: false, invalidReason: pre.reason, invalidMessage: pre.message, payer: pre.payer };
    const refused = this.ports.policy?.terms(pre.key.payer, requirements);
    if (refused) return { isValid: false, invalidReason: refused.reason, invalidMessage: refused.message, payer: pre.key.payer };
    const outOfBounds = await this.timeBounds(pre.eip3009, requirements);
    if (outOfBounds) return { isValid: false, invalidReason: outOfBounds.reason, invalidMessage: outOfBounds.message, payer: pre.key.payer };
    const payer = pre.eip3009.authorization.from;
    const [quick, withCode] = await Promise.all([this.quick(payload, requirements, pre.eip3009), this.payerHasCode(getAddress(pre.key.payer))]);
    if (quick === 'used' || (quick === 'valid' && this.ports.inflight.has(keyString(pre.key)))) return alreadyUsed(payer);
    if (withCode) return this.verifyContractPayer(pre.key, payload, requirements, pre.eip3009);
    if (quick === 'valid') return { isValid: true, payer };
    return this.schemeVerify(pre.key, payload, requirements);
  }

  /**
   * A payer with code checks the signature with its own code, at our gas: refused unless the operator allows
   * contract payers, and then valid only when the settlement fits under the gas ceiling.
   */
  async verifyContractPayer(key: SettlementKey, payload: PaymentPayload, requirements: PaymentRequirements, eip3009: Eip3009Payload): Promise<VerifyResponse> {
    if (this.ports.contractPayers === 'refuse') {
      return { isValid: false, invalidReason: Reason.payerHasCode, invalidMessage: ownWords(Reason.payerHasCode), payer: key.payer };
    }
    const verdict = await this.schemeVerify(key, payload, requirements);
    if (!verdict.isValid) return verdict;
    try {
      await gasWithin(this.ports.client, { account: this.ports.relayers()[0]!, to: getAddress(requirements.asset), data: settlementCallData(eip3009) }, this.ports.maxSettleGas);
    } catch (error) {
      if (isTransportError(error)) throw new ChainUnavailableError(error);
      const reason = error instanceof GasCeilingError ? Reason.gasOverCeiling : Reason.simulationFailed;
      return { isValid: false, invalidReason: reason, invalidMessage: ownWords(reason), payer: key.payer };
    }
    return verdict;
  }

  async payerHasCode(payer: Address): Promise<boolean> {
    try {
      return await this.ports.payerCode.hasCode(payer);
    } catch (error) {
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    }
  }

  /** The SDK's exact scheme verify (precise reason codes), plus the token's own word on the nonce. */
  async schemeVerify(key: SettlementKey, payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    const call = newCallContext();
    const [result, used] = await runInCall(call, () =>
      Promise.all([this.ports.sdk.verify(payload, requirements), this.#authorizationUsed(key).catch((e: unknown) => e)]),
    );
    if (call.rpcFailure) throw new ChainUnavailableError(call.rpcFailure);
    if (used instanceof Error) throw isTransportError(used) ? new ChainUnavailableError(used) : used;
    // USDG quirk: the simulation of a reused nonce succeeds, so ask the token directly.
    if (result.isValid && used === true) return alreadyUsed(result.payer);
    return result.isValid ? result : { ...result, invalidMessage: ownWords(result.invalidReason) };
  }

  /** bounds.ts's window check at the chain's time (on the devchain, brought up to the wall clock first). */
  async timeBounds(eip3009: Eip3009Payload, requirements: PaymentRequirements): Promise<Refusal | null> {
    try {
      return timeBounds(requirements, eip3009, await this.ports.blockTime());
    } catch (error) {
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    }
  }

  async quick(payload: PaymentPayload, requirements: PaymentRequirements, eip3009: Eip3009Payload): Promise<QuickCheck> {
    try {
      return await this.#quickChecker.check(payload, requirements, eip3009);
    } catch (error) {
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    }
  }

  #authorizationUsed(key: SettlementKey): Promise<boolean> {
    return this.ports.client.readContract({
      address: key.asset as `0x${string}`,
      abi: eip3009Abi,
      functionName: 'authorizationState',
      args: [key.payer as `0x${string}`, key.nonce as `0x${string}`],
    });
  }

  /** Token contracts do not go away: a positive answer is kept for the life of the process. */
  async #assetHasCode(asset: Address): Promise<boolean> {
    if (this.#assetsWithCode.has(asset)) return true;
    const code = await this.ports.client.getCode({ address: asset });
    if (!code || code === '0x') return false;
    this.#assetsWithCode.add(asset);
    return true;
  }
}

const alreadyUsed = (payer?: string): VerifyResponse => ({
  isValid: false,
  invalidReason: Reason.nonceAlreadyUsed,
  invalidMessage: 'the authorization is already used or being settled',
  payer,
});
