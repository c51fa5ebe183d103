// Gas is money: every settlement transaction carries a gas limit at or below the ceiling
// (FACILITATOR_MAX_SETTLE_GAS), decided before sending by an estimate run with that same limit. A call
// that fits is sent with its estimate plus headroom (never above the ceiling): only used gas is paid, but
// a lower limit is a lower worst case should the chain's state change between estimate and mining.
//
// A call that fails under the ceiling is estimated once more without it (a read: it costs no gas) to tell
// the two refusals apart: it needs more gas than we pay for (GasCeilingError, `gas_over_ceiling`), or it
// fails anyway (the token's own revert, which names the precise reason).
import type { Address, Hex, PublicClient } from 'viem';
import { isTransportError } from '../../chain/errors.js';

const HEADROOM_PERCENT = 120n;

/** The call needs more gas than the ceiling allows: refused before sending, nothing spent. */
export class GasCeilingError extends Error {
  constructor(readonly ceiling: bigint) {
    super(`the settlement needs more than this facilitator's gas ceiling of ${ceiling}; nothing was sent`);
    this.name = 'GasCeilingError';
  }
}

/** The limit to send `call` with (≤ ceiling). Throws GasCeilingError, the node's revert, or a transport error. */
export async function gasWithin(client: PublicClient, call: { account: Address; to: Address; data: Hex }, ceiling: bigint): Promise<bigint> {
  let estimate: bigint;
  try {
    estimate = await client.estimateGas({ ...call, gas: ceiling });
  } catch (error) {
    if (isTransportError(error)) throw error;
    const unbounded = await client.estimateGas(call).then(
      () => true,
      (again: unknown) => {
        if (isTransportError(again)) throw again;
        return false;
      },
    );
    throw unbounded ? new GasCeilingError(ceiling) : error;
  }
  // A node may take `gas` as a hint rather than a cap: an estimate above the ceiling is refused all the same.
  if (estimate > ceiling) throw new GasCeilingError(ceiling);
  const limit = (estimate * HEADROOM_PERCENT) / 100n;
  return limit < ceiling ? limit : ceiling;
}
