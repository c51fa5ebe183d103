// The relayer's gas float: what all its keys hold together. Below a floor the facilitator stops settling
// before it runs dry mid-batch: the doors anyone can use (the public /settle, the relay) stop first, at
// FACILITATOR_PUBLIC_GAS_FLOOR_WEI; our own modules' settles (purchases already made, withdrawals) go on
// until FACILITATOR_GAS_FLOOR_WEI. Balances are read at most once per `cacheMs`, shared by every caller.
import type { Address, PublicClient } from 'viem';
import { ChainUnavailableError } from '../../chain/errors.js';

export type FloorName = 'public' | 'own';

export interface GasFloors {
  /** The public /settle and the relay stop below this. */
  publicWei: bigint;
  /** Every settle stops below this (lower than publicWei). */
  ownWei: bigint;
}

/** The float is below a floor: nothing was sent. A ChainUnavailableError, so every path answers 503. */
export class GasFloatLowError extends ChainUnavailableError {
  constructor(
    readonly floatWei: bigint,
    readonly floorWei: bigint,
  ) {
    super();
    this.message = `the relayer's gas float (${floatWei} wei) is below its floor (${floorWei} wei); nothing was sent`;
    this.name = 'GasFloatLowError';
  }
}

export class GasFloat {
  #read: { at: number; value: Promise<bigint> } | null = null;

  constructor(
    private readonly client: PublicClient,
    private readonly addresses: readonly Address[],
    readonly floors: GasFloors,
    private readonly cacheMs = 3_000,
  ) {}

  /** All keys' balances together (wei). */
  wei(): Promise<bigint> {
    const now = Date.now();
    if (this.#read && now - this.#read.at < this.cacheMs) return this.#read.value;
    const value = Promise.all(this.addresses.map((address) => this.client.getBalance({ address }))).then((balances) => balances.reduce((a, b) => a + b, 0n));
    const read = { at: now, value };
    this.#read = read;
    value.catch(() => this.#read === read && (this.#read = null));
    return value;
  }

  /** Throws GasFloatLowError when the float is below the named floor (ChainUnavailableError when it cannot be read). */
  async require(floor: FloorName): Promise<void> {
    const floorWei = floor === 'public' ? this.floors.publicWei : this.floors.ownWei;
    if (floorWei === 0n) return;
    let float: bigint;
    try {
      float = await this.wei();
    } catch (error) {
      throw new ChainUnavailableError(error);
    }
    if (float < floorWei) throw new GasFloatLowError(float, floorWei);
  }
}
