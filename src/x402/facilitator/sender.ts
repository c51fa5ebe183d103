// Sends the relayer's transactions with nonces that stay correct under concurrent settles: gas is
// estimated by the callers in parallel, but nonce assignment, signing and eth_sendRawTransaction run
// one at a time in a queue (a send to anvil takes about a millisecond). Signing locally means the
// hash is known even when the send's answer is lost.
import { keccak256, TransactionNotFoundError, type Address, type Hash, type Hex, type PublicClient } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { estimateFeesPerGas, getGasPrice, getTransaction, getTransactionCount, sendRawTransaction } from 'viem/actions';
import { isTransportError } from '../../chain/errors.js';

export interface RelayerTx {
  to: Address;
  data: Hex;
  gas: bigint;
}

/** The send's answer was lost: the transaction (this hash) may or may not be on its way. */
export class BroadcastUncertainError extends Error {
  constructor(
    readonly hash: Hash,
    cause: unknown,
  ) {
    super(`broadcast of ${hash} uncertain: ${cause instanceof Error ? cause.message.split('\n')[0] : String(cause)}`, { cause });
    this.name = 'BroadcastUncertainError';
  }
}

type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint };
const FEE_TTL_MS = 2_000;
const NONCE_RESYNC = /nonce too low|nonce too high|already known|replacement transaction underpriced|invalid nonce/i;

export class RelayerSender {
  #queue: Promise<unknown> = Promise.resolve();
  #nonce: number | null = null;
  #fees: { value: Fees; at: number } | null = null;

  constructor(
    readonly account: PrivateKeyAccount,
    /** Must not retry by itself: a blind resend after a lost answer is our decision, not the transport's. */
    private readonly client: PublicClient,
    private readonly chainId: number,
  ) {}

  send(tx: RelayerTx): Promise<Hash> {
    const run = this.#queue.then(() => this.#send(tx));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #send(tx: RelayerTx, resynced = false): Promise<Hash> {
    this.#nonce ??= await getTransactionCount(this.client, { address: this.account.address, blockTag: 'pending' });
    const nonce = this.#nonce;
    const serialized = await this.account.signTransaction({
      chainId: this.chainId,
      nonce,
      to: tx.to,
      data: tx.data,
      gas: tx.gas,
      ...(await this.#currentFees()),
    });
    const hash = keccak256(serialized);
    try {
      await sendRawTransaction(this.client, { serializedTransaction: serialized });
      this.#nonce = nonce + 1;
      return hash;
    } catch (error) {
      // Next send asks the node again: it knows whether this one arrived.
      this.#nonce = null;
      if (isTransportError(error)) throw new BroadcastUncertainError(hash, error);
      const message = error instanceof Error ? error.message : String(error);
      if (/already known/i.test(message)) return hash;
      if (!resynced && NONCE_RESYNC.test(message)) {
        // Our own earlier attempt of this very transaction may hold the nonce: then it is sent.
        if (await this.#known(hash)) return hash;
        return this.#send(tx, true); // another sender took the nonce; this one never went out
      }
      throw error;
    }
  }

  async #known(hash: Hash): Promise<boolean> {
    try {
      await getTransaction(this.client, { hash });
      return true;
    } catch (error) {
      if (error instanceof TransactionNotFoundError) return false;
      throw new BroadcastUncertainError(hash, error);
    }
  }

  async #currentFees(): Promise<Fees> {
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
