// Whether a payer has code: a contract wallet, or an EOA delegated through EIP-7702. The token checks such
// a payer's signature by calling its code (EIP-1271) with all the gas our transaction forwards, so the
// payer decides how much of our gas a settle burns: the facilitator refuses them by default
// (FACILITATOR_CONTRACT_PAYERS) and never sends them on the quick path or inside a batch.
//
// Code can appear at an address between two blocks (a deployment, a 7702 delegation), so an answer is
// kept for the block it was read at and no longer; the block number itself is read at most once per
// `blockCacheMs`, shared by every caller.
import type { Address, Hex, PublicClient } from 'viem';

export type ContractPayers = 'refuse' | 'allow';

const MAX_ENTRIES = 10_000;

export class PayerCode {
  readonly #answers = new Map<string, { block: bigint; code: Promise<Hex | undefined> }>();

  constructor(
    private readonly client: PublicClient,
    private readonly blockCacheMs: number,
  ) {}

  /** The payer's code at the current block ('0x' or undefined: none). Rejects when the RPC does not answer. */
  async code(address: Address): Promise<Hex | undefined> {
    const block = await this.client.getBlockNumber({ cacheTime: this.blockCacheMs });
    const key = address.toLowerCase();
    const known = this.#answers.get(key);
    if (known && known.block === block) return known.code;
    const code = this.client.getCode({ address, blockNumber: block });
    if (this.#answers.size >= MAX_ENTRIES) this.#answers.clear();
    this.#answers.set(key, { block, code });
    // A failed read is not an answer: the next caller asks again.
    code.catch(() => this.#answers.get(key)?.code === code && this.#answers.delete(key));
    return code;
  }

  async hasCode(address: Address): Promise<boolean> {
    return hasCode(await this.code(address));
  }
}

export const hasCode = (code: Hex | undefined): boolean => code !== undefined && code !== '0x';
