// Test helpers: an ephemeral devchain and EIP-3009 payments we relay ourselves.
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import {
  createPublicClient,
  createWalletClient,
  http,
  parseUnits,
  toHex,
  type Address,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
  type WalletClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, type LocalAccount, type PrivateKeyAccount } from 'viem/accounts';
import { devchainChain, startEphemeralDevchain, USDG_ADDRESS, type Devchain } from '../../src/chain/devchain.js';
import { ChainIndexer, type ChainIndexerOptions } from '../../src/chain/indexer/indexer.js';
import { usdgAbi } from '../../src/chain/usdg-artifact.js';
import { systemClock } from '../../src/platform/clock.js';
import { transferWithAuthorizationTypes } from '../../src/chain/eip3009.js';
import type { Db } from '../../src/platform/db.js';
import { PaymentIndexStore } from '../../src/modules/txapi/index-store.js';

export const CHAIN_ID = 4663;
export const silentLog = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

const domain = { name: 'Global Dollar', version: '1', chainId: CHAIN_ID, verifyingContract: USDG_ADDRESS } as const;
const types = transferWithAuthorizationTypes;

export interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
  signature: Hex;
}

export class TestChain {
  readonly pub: PublicClient;
  readonly wallet: WalletClient;
  private constructor(
    readonly devchain: Devchain,
    /** Our facilitator relayer (the indexer's signer). */
    readonly relayer: LocalAccount = privateKeyToAccount(generatePrivateKey()),
    private readonly owned = true,
  ) {
    const chain = devchainChain(devchain.rpcUrl);
    this.pub = createPublicClient({ chain, transport: http(devchain.rpcUrl), pollingInterval: 50 });
    this.wallet = createWalletClient({ chain, transport: http(devchain.rpcUrl), pollingInterval: 50 });
  }

  static async start(): Promise<TestChain> {
    const chain = new TestChain(await startEphemeralDevchain());
    await chain.devchain.fundGas(chain.relayer.address);
    return chain;
  }

  /** Drives a devchain someone else runs (a test app's ctx.chain), relaying as its relayer. */
  static attach(devchain: Devchain, relayer: LocalAccount): TestChain {
    return new TestChain(devchain, relayer, false);
  }

  async stop(): Promise<void> {
    if (this.owned) await this.devchain.stop();
  }

  /** A new payer holding `usdg` USDG. */
  async payer(usdg = '100'): Promise<PrivateKeyAccount> {
    const account = privateKeyToAccount(generatePrivateKey());
    await this.devchain.fund(account.address, usdg);
    return account;
  }

  async authorize(payer: PrivateKeyAccount, to: Address, atomic: bigint, nonce: Hex = toHex(randomBytes(32))): Promise<Authorization> {
    const now = (await this.pub.getBlock()).timestamp;
    const message = { from: payer.address, to, value: atomic, validAfter: 0n, validBefore: now + 3600n, nonce };
    const signature = await payer.signTypedData({ domain, types, primaryType: 'TransferWithAuthorization', message });
    return { ...message, signature };
  }

  /** Relays transferWithAuthorization (bytes form) and waits for the receipt. */
  async relay(auth: Authorization, relayer: LocalAccount = this.relayer): Promise<TransactionReceipt> {
    const hash = await this.wallet.writeContract({
      address: USDG_ADDRESS,
      abi: usdgAbi,
      functionName: 'transferWithAuthorization',
      args: [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, auth.signature],
      account: relayer,
      chain: null,
      gas: 300_000n,
    });
    const receipt = await this.pub.waitForTransactionReceipt({ hash });
    if (receipt.status !== 'success') throw new Error(`relay reverted: ${hash}`);
    return receipt;
  }

  /** Authorize and relay in one go. */
  async pay(payer: PrivateKeyAccount, to: Address, usdg: string, relayer?: LocalAccount) {
    const auth = await this.authorize(payer, to, parseUnits(usdg, 6));
    const receipt = await this.relay(auth, relayer);
    return { auth, receipt };
  }

  async mine(blocks = 1): Promise<void> {
    await this.rpc('anvil_mine', [toHex(blocks)]);
  }

  snapshot(): Promise<Hex> {
    return this.rpc('evm_snapshot', []) as Promise<Hex>;
  }

  async revert(id: Hex): Promise<void> {
    if ((await this.rpc('evm_revert', [id])) !== true) throw new Error('evm_revert failed');
  }

  async head(): Promise<number> {
    return Number(await this.pub.getBlockNumber({ cacheTime: 0 }));
  }

  indexer(db: Db, overrides: Partial<ChainIndexerOptions> = {}): ChainIndexer {
    return new ChainIndexer({
      sink: new PaymentIndexStore(db),
      client: this.pub,
      chainId: CHAIN_ID,
      tokens: [USDG_ADDRESS],
      signers: () => [this.relayer.address],
      confirmations: 0,
      clock: systemClock,
      log: silentLog,
      ...overrides,
    });
  }

  private async rpc(method: string, params: unknown[]): Promise<unknown> {
    return this.pub.request({ method: method as 'eth_chainId', params: params as never });
  }
}

/** Ticks until the indexer has caught up with the head. */
export async function catchUp(indexer: ChainIndexer) {
  for (let i = 0; i < 100; i++) {
    const tick = await indexer.tick();
    if (!tick.more) return tick;
  }
  throw new Error('indexer did not catch up');
}
