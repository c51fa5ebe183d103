// What the facilitator lends a scheme engine beside EIP-3009 (permit2/payments.ts, batch/shared.ts): its parts,
// and the single-row steps after a claim, which are the same for every kind (execute.ts, answering.ts).
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import type { PublicClient } from 'viem';
import type { Logger } from 'pino';
import type { BlockClock } from '../../chain/block-clock.js';
import type { SettlementRow } from '../tables.js';
import type { ExecuteOptions } from './execute.js';
import type { GasFloat } from './gas-float.js';
import type { SettlementLedger } from './ledger.js';
import type { ContractPayers, PayerCode } from './payer-code.js';
import type { SettlePolicy } from './settle-policy.js';
import type { FacilitatorSigner } from './signer.js';

export interface EnginePorts {
  network: string;
  chainId: number;
  client: PublicClient;
  ledger: SettlementLedger;
  signer: FacilitatorSigner;
  blockTime: BlockClock;
  log: Logger;
  policy: SettlePolicy | null;
  gasFloat: GasFloat;
  payerCode: PayerCode;
  contractPayers: ContractPayers;
  /** The scheme's gas ceiling per send (its FACILITATOR_MAX_*_GAS). */
  maxGas: bigint;
  /** The SDK's verify of the payload (signature, spender, witness, simulation): its reason codes. Throws ChainUnavailableError. */
  sdkVerify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  /** Settles of one key in this process join the running one. */
  inflight: Map<string, Promise<SettleResponse>>;
  resume(row: SettlementRow, call: { payloadHash: string; paymentId: string | null }): Promise<SettleResponse>;
  execute(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements, options: ExecuteOptions): Promise<SettleResponse>;
  finishOwned(row: SettlementRow, response: SettleResponse, transferLogIndex?: number): Promise<SettleResponse>;
}
