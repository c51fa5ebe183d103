// The common case, cheaply: an honest EOA payment. The token's own simulation of
// transferWithAuthorization checks the signature natively, so no JavaScript ECDSA recovery (the SDK's
// verify spends ~1.5 ms of CPU on it); the authorization state is read beside it (USDG quirk).
// Concurrent checks share one eth_call: Multicall3 aggregate3 over all of them, so the node runs one
// EVM call per batch instead of one per payment. Anything not plainly valid or plainly used answers
// `unknown`, and the caller asks the SDK's exact scheme, which names the precise reason.
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import {
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  parseAbi,
  parseSignature,
  prepareEncodeFunctionData,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { isTransportError } from '../../chain/errors.js';
import { aggregate3Abi, aggregate3Fn, MULTICALL3_ADDRESS, type Call3 } from '../../chain/multicall3.js';
import type { Eip3009Payload } from '../payload.js';

export type QuickCheck = 'valid' | 'used' | 'unknown';

// Selectors hashed once: viem's encodeFunctionData would hash the signature on every call.
const stateFn = prepareEncodeFunctionData({
  abi: parseAbi(['function authorizationState(address authorizer, bytes32 nonce) view returns (bool)']),
  functionName: 'authorizationState',
});
const transferFn = prepareEncodeFunctionData({
  abi: parseAbi(['function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)']),
  functionName: 'transferWithAuthorization',
});
// The exact scheme's own margin: validBefore must leave 6 s for the transaction to land.
const VALID_BEFORE_MARGIN_S = 6n;
const TRUE_WORD = `0x${'0'.repeat(63)}1`;
// Several smaller batches in flight beat one big one (the node runs them in parallel); 32
// simulated transfers (~75k gas each) stay far below any eth_call gas cap.
const MAX_BATCH = 32;

interface Pending {
  calls: [Call3, Call3];
  resolve(result: QuickCheck): void;
  reject(error: unknown): void;
}

export class QuickChecker {
  #queue: Pending[] = [];
  #scheduled = false;

  constructor(
    private readonly client: PublicClient,
    private readonly assetHasCode: (asset: Address) => Promise<boolean>,
  ) {}

  async check(payload: PaymentPayload, requirements: PaymentRequirements, eip3009: Eip3009Payload): Promise<QuickCheck> {
    if (!isPlain(payload, requirements, eip3009)) return 'unknown';
    const asset = getAddress(requirements.asset);
    if (!(await this.assetHasCode(asset))) return 'unknown';
    let calls: [Call3, Call3];
    try {
      calls = transferCalls(asset, eip3009);
    } catch {
      return 'unknown'; // out-of-range numbers, an unparsable signature: the scheme will say which
    }
    return new Promise<QuickCheck>((resolve, reject) => {
      this.#queue.push({ calls, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    while (this.#queue.length) void this.#run(this.#queue.splice(0, MAX_BATCH));
  }

  async #run(batch: Pending[]): Promise<void> {
    // aggregate3 runs its calls in order inside one EVM call, so a simulated transfer marks its nonce
    // used for every later call: all state reads go first, and copies of one check share one result
    // (otherwise a payment's copy would read the simulation of the first and be called "used").
    const unique = new Map<string, number>();
    const slots = batch.map((p) => {
      const id = `${p.calls[1].target}:${p.calls[1].callData}`;
      if (!unique.has(id)) unique.set(id, unique.size);
      return unique.get(id)!;
    });
    const firsts = [...unique.values()].map((slot) => batch[slots.indexOf(slot)]!.calls);
    try {
      const data = encodeFunctionData({ ...aggregate3Fn, args: [[...firsts.map((c) => c[0]), ...firsts.map((c) => c[1])]] });
      const { data: returned } = await this.client.call({ to: MULTICALL3_ADDRESS, data });
      const results = decodeFunctionResult({ abi: aggregate3Abi, functionName: 'aggregate3', data: returned ?? '0x' });
      batch.forEach((p, i) => {
        const [state, simulation] = [results[slots[i]!], results[firsts.length + slots[i]!]];
        if (state?.success && state.returnData === TRUE_WORD) p.resolve('used');
        else p.resolve(state?.success && simulation?.success ? 'valid' : 'unknown');
      });
    } catch (error) {
      // A dead RPC is the caller's to report; anything else (no Multicall3 here, say) the scheme explains.
      for (const p of batch) isTransportError(error) ? p.reject(error) : p.resolve('unknown');
    }
  }
}

function transferCalls(asset: Address, eip3009: Eip3009Payload): [Call3, Call3] {
  const from = getAddress(eip3009.authorization.from);
  return [
    { target: asset, allowFailure: true, callData: encodeFunctionData({ ...stateFn, args: [from, eip3009.authorization.nonce as Hex] }) },
    { target: asset, allowFailure: true, callData: parsedTransferData(eip3009) },
  ];
}

/** The transferWithAuthorization call (v, r, s form) for a 65-byte signature: what is simulated here is what a settle sends. */
export function transferWithAuthorizationData(eip3009: Eip3009Payload): Hex {
  const auth = eip3009.authorization;
  const { r, s, v, yParity } = parseSignature(eip3009.signature as Hex);
  return encodeFunctionData({
    ...transferFn,
    args: [getAddress(auth.from), getAddress(auth.to), BigInt(auth.value), BigInt(auth.validAfter), BigInt(auth.validBefore), auth.nonce as Hex, Number(v ?? BigInt(yParity + 27)), r, s],
  });
}

// A settle encodes its transfer for the quick check and then sends the same bytes (~70 µs of CPU per encoding here):
// kept per parsed authorization (precheck's, a fresh object per call that nothing changes), never per caller's object.
const encoded = new WeakMap<Eip3009Payload, Hex>();

/** transferWithAuthorizationData of an authorization precheck parsed, encoded once per call. */
export function parsedTransferData(parsed: Eip3009Payload): Hex {
  let data = encoded.get(parsed);
  if (!data) encoded.set(parsed, (data = transferWithAuthorizationData(parsed)));
  return data;
}

const transferBytesFn = prepareEncodeFunctionData({
  abi: parseAbi(['function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)']),
  functionName: 'transferWithAuthorization',
});

/** The call a settle sends for any signature: the v, r, s form for 65 bytes (as the SDK), else the bytes form. */
export function settlementCallData(eip3009: Eip3009Payload): Hex {
  if (eip3009.signature.length === 132) return transferWithAuthorizationData(eip3009);
  const auth = eip3009.authorization;
  return encodeFunctionData({
    ...transferBytesFn,
    args: [getAddress(auth.from), getAddress(auth.to), BigInt(auth.value), BigInt(auth.validAfter), BigInt(auth.validBefore), auth.nonce as Hex, eip3009.signature as Hex],
  });
}

/** The scheme's off-chain checks, in its order; a 65-byte ECDSA signature (contract signers go the long way). */
function isPlain(payload: PaymentPayload, requirements: PaymentRequirements, eip3009: Eip3009Payload): boolean {
  const extra = requirements.extra as { name?: unknown; version?: unknown };
  const auth = eip3009.authorization;
  const now = BigInt(Math.floor(Date.now() / 1000));
  return (
    payload.accepted.scheme === 'exact' &&
    requirements.scheme === 'exact' &&
    typeof extra.name === 'string' &&
    typeof extra.version === 'string' &&
    payload.accepted.network === requirements.network &&
    eip3009.signature.length === 132 &&
    getAddress(auth.to) === getAddress(requirements.payTo) &&
    BigInt(auth.validBefore) >= now + VALID_BEFORE_MARGIN_S &&
    BigInt(auth.validAfter) <= now &&
    BigInt(auth.value) === BigInt(requirements.amount)
  );
}
