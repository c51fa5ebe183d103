import { z } from 'zod';
import { chainSettings } from '../../chain/settings.js';
import { keysSettings } from '../../platform/keys-settings.js';
import { addressList, atomicAmount, defineSettings, hexKey, list, optionalUrl, positiveInt, trimSlash, weiAmount, type EnvOf } from '../../platform/settings.js';

export interface FacilitatorConfig {
  facilitatorUrl: string | null;
  facilitatorPrivateKey: string | null;
  /**
   * The relayer pool's keys: FACILITATOR_PRIVATE_KEYS, or FACILITATOR_PRIVATE_KEY as a pool of one;
   * empty = dev keys generated into the data dir (embedded devchain only, FACILITATOR_RELAYER_COUNT of them).
   */
  facilitatorPrivateKeys: string[];
  /** Relayer keys held in AWS KMS (FACILITATOR_KMS_KEY_IDS), with the wallets' KMS settings; none when empty. */
  facilitatorKmsKeyIds: string[];
  /** Dev keys the embedded devchain generates when no key is given (default 1). */
  facilitatorRelayerCount: number;
  /** Stuck settlement transactions: replaced after `replaceAfterMs` unmined, up to `maxReplacements` times. */
  facilitatorReplacement: { replaceAfterMs: number; maxReplacements: number };
  /** Settlement batches per relayer lane: closed at `maxCalls` calls or `waitMs` after the first (maxCalls 1: no batching); `idle` see BatchPolicy. */
  facilitatorBatch: { maxCalls: number; waitMs: number; idle: 'send' | 'wait' };
  /** A relayer key below this balance is reported low on gas (relayerStatus). */
  facilitatorLowGasWei: bigint;
  /**
   * Gas is money: no settlement leaves with a gas limit above `maxSettleGas`; payers with code are refused
   * or allowed (under the ceiling); below `publicFloorWei` of float (all relayer keys together) the public
   * /settle and the relay stop, below `floorWei` every settle does.
   */
  facilitatorGas: {
    maxSettleGas: bigint;
    maxPermit2SettleGas: bigint;
    maxBatchSettlementGas: bigint;
    maxClaimGasPerVoucher: bigint;
    contractPayers: 'refuse' | 'allow';
    publicFloorWei: bigint;
    floorWei: bigint;
  };
  /**
   * Limits on the public facilitator origin (fixed windows of windowSeconds): /settle and /verify per
   * client address, and settles of verified payments per payer and per payTo (in PostgreSQL).
   */
  facilitatorLimits: {
    settlePerClient: number;
    verifyPerClient: number;
    settlePerPayer: number;
    settlePerPayTo: number;
    /** Per user who owns the merchants paid at a payTo: more merchants do not buy more settles. */
    settlePerOwner: number;
    windowSeconds: number;
    /** Atomic units: the public origin settles nothing smaller (each settle costs our gas). */
    minSettleAmount: bigint;
  };
  /**
   * Which payTo the public facilitator origin serves: `any`, or `registered` (enabled merchants, the
   * sellers listed here, X402_TEST_PAY_TO). Default: `any` on the embedded devchain, `registered` with CHAIN_RPC_URL.
   */
  facilitatorPayTo: { policy: 'any' | 'registered'; sellers: string[] };
  /** Open settlements untouched this long are the reconciler's (their settle died or gave up). */
  facilitatorReconcileAfterMs: number;
  /** How long one settle waits for its receipt before answering settlement_pending. */
  facilitatorConfirmationTimeoutMs: number;
  /**
   * Senders of an external facilitator's settlements (FACILITATOR_SIGNERS), registered with this
   * deployment's own relayers so the indexer attributes their payments too.
   */
  facilitatorSigners: string[];
}

const env = {
  FACILITATOR_URL: optionalUrl,
  FACILITATOR_PRIVATE_KEY: hexKey,
  FACILITATOR_PRIVATE_KEYS: z
    .string()
    .regex(/^\s*(0x)?[0-9a-fA-F]{64}\s*(,\s*(0x)?[0-9a-fA-F]{64}\s*)*$/, 'must be a comma-separated list of 32-byte hex keys')
    .optional(),
  FACILITATOR_KMS_KEY_IDS: z.string().max(4096).optional(),
  FACILITATOR_RELAYER_COUNT: z.coerce.number().int().min(1).max(64).optional(),
  FACILITATOR_REPLACE_AFTER_MS: positiveInt(20_000),
  FACILITATOR_MAX_REPLACEMENTS: z.coerce.number().int().min(0).max(50).default(5),
  FACILITATOR_BATCH_MAX_CALLS: z.coerce.number().int().min(1).max(200).default(64),
  FACILITATOR_BATCH_WAIT_MS: z.coerce.number().int().min(0).max(5_000).default(10),
  FACILITATOR_BATCH_IDLE: z.enum(['send', 'wait']).default('send'),
  FACILITATOR_LOW_GAS_WEI: z.string().regex(/^\d+$/, 'must be a whole number of wei').default('10000000000000000'),
  // An EOA's transferWithAuthorization needs 60-85k: a lower ceiling would send settlements that run out of gas.
  FACILITATOR_MAX_SETTLE_GAS: z.coerce.number().int().min(90_000).max(5_000_000).default(120_000),
  // A Permit2 settle (exact over Permit2, upto) measures ~120k for a new payee: its own ceiling, the same kind of margin.
  FACILITATOR_MAX_PERMIT2_SETTLE_GAS: z.coerce.number().int().min(130_000).max(5_000_000).default(160_000),
  // batch-settlement: a first deposit measures ~135k, a sweep ~60k; a claim ~75k for one voucher, less for each more.
  FACILITATOR_MAX_BATCH_SETTLEMENT_GAS: z.coerce.number().int().min(160_000).max(5_000_000).default(250_000),
  FACILITATOR_MAX_CLAIM_GAS_PER_VOUCHER: z.coerce.number().int().min(40_000).max(1_000_000).default(60_000),
  FACILITATOR_CONTRACT_PAYERS: z.enum(['refuse', 'allow']).default('refuse'),
  FACILITATOR_PUBLIC_GAS_FLOOR_WEI: weiAmount('5000000000000000'),
  FACILITATOR_GAS_FLOOR_WEI: weiAmount('1000000000000000'),
  FACILITATOR_SETTLE_LIMIT_PER_CLIENT: positiveInt(600),
  FACILITATOR_VERIFY_LIMIT_PER_CLIENT: positiveInt(6000),
  FACILITATOR_LIMIT_WINDOW_SECONDS: positiveInt(60),
  FACILITATOR_SETTLE_LIMIT_PER_PAYER: positiveInt(120),
  FACILITATOR_SETTLE_LIMIT_PER_PAY_TO: positiveInt(3000),
  FACILITATOR_SETTLE_LIMIT_PER_OWNER: positiveInt(6000),
  FACILITATOR_MIN_SETTLE_AMOUNT: atomicAmount(78, '100'),
  FACILITATOR_PAY_TO_POLICY: z.enum(['any', 'registered']).optional(),
  FACILITATOR_SELLERS: addressList,
  FACILITATOR_RECONCILE_AFTER_MS: positiveInt(15_000),
  FACILITATOR_CONFIRMATION_TIMEOUT_MS: positiveInt(30_000),
  FACILITATOR_SIGNERS: addressList,
};
const reads = { CHAIN_RPC_URL: chainSettings.env.CHAIN_RPC_URL, WALLET_KEY_PROVIDER: keysSettings.env.WALLET_KEY_PROVIDER };
type FacilitatorEnv = EnvOf<typeof env & typeof reads>;

/** Our x402 facilitator: its relayer keys, settlement transactions, gas, limits and whom it settles for. */
export const facilitatorSettings = defineSettings({
  env,
  reads,
  fallbacks: { FACILITATOR_RELAYER_COUNT: '1' },
  load: (e): FacilitatorConfig => ({
    facilitatorUrl: trimSlash(e.FACILITATOR_URL) ?? null,
    facilitatorPrivateKey: e.FACILITATOR_PRIVATE_KEY ?? null,
    facilitatorPrivateKeys: e.FACILITATOR_PRIVATE_KEYS
      ? e.FACILITATOR_PRIVATE_KEYS.split(',').map((k) => k.trim())
      : e.FACILITATOR_PRIVATE_KEY
        ? [e.FACILITATOR_PRIVATE_KEY]
        : [],
    facilitatorKmsKeyIds: list(e.FACILITATOR_KMS_KEY_IDS),
    facilitatorRelayerCount: e.FACILITATOR_RELAYER_COUNT ?? 1,
    facilitatorReplacement: { replaceAfterMs: e.FACILITATOR_REPLACE_AFTER_MS, maxReplacements: e.FACILITATOR_MAX_REPLACEMENTS },
    facilitatorBatch: { maxCalls: e.FACILITATOR_BATCH_MAX_CALLS, waitMs: e.FACILITATOR_BATCH_WAIT_MS, idle: e.FACILITATOR_BATCH_IDLE },
    facilitatorLowGasWei: BigInt(e.FACILITATOR_LOW_GAS_WEI),
    facilitatorGas: {
      maxSettleGas: BigInt(e.FACILITATOR_MAX_SETTLE_GAS),
      maxPermit2SettleGas: BigInt(e.FACILITATOR_MAX_PERMIT2_SETTLE_GAS),
      maxBatchSettlementGas: BigInt(e.FACILITATOR_MAX_BATCH_SETTLEMENT_GAS),
      maxClaimGasPerVoucher: BigInt(e.FACILITATOR_MAX_CLAIM_GAS_PER_VOUCHER),
      contractPayers: e.FACILITATOR_CONTRACT_PAYERS,
      publicFloorWei: BigInt(e.FACILITATOR_PUBLIC_GAS_FLOOR_WEI),
      floorWei: BigInt(e.FACILITATOR_GAS_FLOOR_WEI),
    },
    facilitatorReconcileAfterMs: e.FACILITATOR_RECONCILE_AFTER_MS,
    facilitatorConfirmationTimeoutMs: e.FACILITATOR_CONFIRMATION_TIMEOUT_MS,
    facilitatorSigners: list(e.FACILITATOR_SIGNERS),
    facilitatorLimits: {
      settlePerClient: e.FACILITATOR_SETTLE_LIMIT_PER_CLIENT,
      verifyPerClient: e.FACILITATOR_VERIFY_LIMIT_PER_CLIENT,
      settlePerPayer: e.FACILITATOR_SETTLE_LIMIT_PER_PAYER,
      settlePerPayTo: e.FACILITATOR_SETTLE_LIMIT_PER_PAY_TO,
      settlePerOwner: e.FACILITATOR_SETTLE_LIMIT_PER_OWNER,
      minSettleAmount: BigInt(e.FACILITATOR_MIN_SETTLE_AMOUNT),
      windowSeconds: e.FACILITATOR_LIMIT_WINDOW_SECONDS,
    },
    facilitatorPayTo: {
      // A public facilitator on a real chain pays gas for whoever calls it: only known sellers by default.
      policy: e.FACILITATOR_PAY_TO_POLICY ?? (e.CHAIN_RPC_URL ? 'registered' : 'any'),
      sellers: list(e.FACILITATOR_SELLERS),
    },
  }),
  problems: relayerKeyProblems,
  // Without CHAIN_RPC_URL the devchain's generated relayer keys would settle.
  devKeys: (e) => (!e.CHAIN_RPC_URL && !e.FACILITATOR_PRIVATE_KEY && !e.FACILITATOR_PRIVATE_KEYS && !e.FACILITATOR_KMS_KEY_IDS ? ['FACILITATOR_PRIVATE_KEYS'] : []),
});

/** The relayer-key variables that cannot go together. */
function relayerKeyProblems(e: FacilitatorEnv): string[] {
  const problems: string[] = [];
  if (e.FACILITATOR_PRIVATE_KEY && e.FACILITATOR_PRIVATE_KEYS) {
    problems.push('FACILITATOR_PRIVATE_KEY and FACILITATOR_PRIVATE_KEYS are both set: use one (FACILITATOR_PRIVATE_KEYS for a pool of keys)');
  }
  if (e.FACILITATOR_PRIVATE_KEYS) {
    const keys = e.FACILITATOR_PRIVATE_KEYS.split(',').map((k) => k.trim().toLowerCase().replace(/^0x/, ''));
    if (new Set(keys).size !== keys.length) problems.push('FACILITATOR_PRIVATE_KEYS: lists a key twice (two lanes would share one nonce sequence)');
  }
  if (e.FACILITATOR_KMS_KEY_IDS && (e.FACILITATOR_PRIVATE_KEY || e.FACILITATOR_PRIVATE_KEYS || e.FACILITATOR_RELAYER_COUNT !== undefined)) {
    problems.push('FACILITATOR_KMS_KEY_IDS: the relayer keys come from KMS or from FACILITATOR_PRIVATE_KEY(S) (or generated dev keys), not both');
  }
  if (e.FACILITATOR_KMS_KEY_IDS && e.WALLET_KEY_PROVIDER !== 'aws-kms') {
    problems.push('FACILITATOR_KMS_KEY_IDS: needs WALLET_KEY_PROVIDER=aws-kms (its AWS_REGION, credentials and endpoint reach the keys)');
  }
  if (e.FACILITATOR_RELAYER_COUNT !== undefined && (e.FACILITATOR_PRIVATE_KEY || e.FACILITATOR_PRIVATE_KEYS)) {
    problems.push('FACILITATOR_RELAYER_COUNT: only for generated dev keys; with FACILITATOR_PRIVATE_KEY(S) the pool is the keys given');
  }
  if (e.FACILITATOR_RELAYER_COUNT !== undefined && e.CHAIN_RPC_URL) {
    problems.push('FACILITATOR_RELAYER_COUNT: dev keys exist on the embedded devchain only; with CHAIN_RPC_URL set FACILITATOR_PRIVATE_KEYS');
  }
  return problems;
}
