// What a relayer lane's transactions pay (sender.ts): the market's fees, asked of the node at most every couple of
// seconds (EIP-1559 when the node prices that way, else a legacy gas price), and a stuck transaction's replacement
// fees, high enough above the stuck version's that every node accepts the replacement at its nonce.
import type { PublicClient } from 'viem';
import { estimateFeesPerGas, getGasPrice } from 'viem/actions';

export type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint };
const FEE_TTL_MS = 2_000;

/** The market's fees, cached for FEE_TTL_MS (forget() before pricing a replacement: it wants the market now). */
export class MarketFees {
  #fees: { value: Fees; at: number } | null = null;

  constructor(private readonly client: PublicClient) {}

  forget(): void {
    this.#fees = null;
  }

  async current(): Promise<Fees> {
    if (this.#fees && Date.now() - this.#fees.at < FEE_TTL_MS) return this.#fees.value;
    let value: Fees;
    try {
      const { maxFeePerGas, maxPriorityFeePerGas } = await estimateFeesPerGas(this.client);
      value = { maxFeePerGas, maxPriorityFeePerGas };
    } catch {
      value = { gasPrice: await getGasPrice(this.client) };
    }
    this.#fees = { value, at: Date.now() };
    return value;
  }
}

/** +12.5 %, rounded up, plus one wei: strictly above the replacement threshold whichever way a node rounds. */
const bump = (value: bigint) => (value * 1125n + 999n) / 1000n + 1n;
const max = (...values: bigint[]) => values.reduce((a, b) => (a > b ? a : b));

/** A replacement's fees: at least 12.5 % above the stuck version's on every field, and never below the market. */
export function bumpFees(old: Fees, market: Fees): Fees {
  if ('gasPrice' in old) {
    const marketPrice = 'gasPrice' in market ? market.gasPrice : market.maxFeePerGas;
    return { gasPrice: max(bump(old.gasPrice), marketPrice) };
  }
  const marketTip = 'gasPrice' in market ? 0n : market.maxPriorityFeePerGas;
  const marketMax = 'gasPrice' in market ? market.gasPrice : market.maxFeePerGas;
  const maxPriorityFeePerGas = max(bump(old.maxPriorityFeePerGas), marketTip);
  return { maxPriorityFeePerGas, maxFeePerGas: max(bump(old.maxFeePerGas), marketMax, maxPriorityFeePerGas) };
}

