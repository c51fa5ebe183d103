// Deposit addresses (docs/intents.md#deposit-addresses): an intent can be paid by a plain ERC-20 transfer to an
// address of its own, from any wallet or exchange. The address is derived when the checkout first asks for it
// (deposit-keys.ts), the deposit watcher credits what arrives (deposit-store.ts), and the sweeper passes it on to
// the merchant's payTo (sweep.ts).
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.js';
import type { DepositKeys } from './deposit-keys.js';
import type { DepositRow, DepositStore } from './deposit-store.js';
import type { IntentRow } from './tables.js';

/** What the checkout shows of an intent's deposit address. */
export interface DepositView {
  address: string;
  /** Atomic units still due (the amount less what its deposit address received). */
  due: string;
  /** EIP-681: a transfer of `due` USDG to the address, for any wallet to scan. */
  uri: string;
}

export class Deposits {
  constructor(
    private readonly ctx: AppContext,
    readonly store: DepositStore,
    readonly keys: DepositKeys,
  ) {}

  /** The intent's deposit address, derived and recorded on the first ask (the same address every time). */
  async addressOf(intent: IntentRow): Promise<DepositRow> {
    const known = await this.store.deposit(intent.id);
    if (known) return known;
    const now = this.ctx.clock.now();
    // A racing first ask may store its own seed first: whichever stays is the project's, and both derive from it.
    const sealed = (await this.store.sealedSeed(intent.projectId)) ?? (await this.store.keepSeed(intent.projectId, this.keys.seal(randomBytes(32), intent.projectId), now));
    const { address } = this.keys.account(sealed, intent.projectId, intent.id);
    return this.store.keepDeposit({ intentId: intent.id, projectId: intent.projectId, address }, now);
  }

  /**
   * The payer's view of it: for a pending intent, the address with what is still due (made on this first ask);
   * for any other, the address if it has one (a late payment is still credited there), with nothing due.
   */
  async viewOf(intent: IntentRow): Promise<DepositView | null> {
    const deposit = intent.status === 'pending' ? await this.addressOf(intent) : await this.store.deposit(intent.id);
    if (!deposit) return null;
    const owed = BigInt(intent.amount) - BigInt(deposit.received);
    const due = intent.status === 'pending' && owed > 0n ? owed : 0n;
    return { address: deposit.address, due: due.toString(), uri: eip681(intent.asset, this.ctx.chain.chainId, deposit.address, due) };
  }
}

/** `ethereum:<token>@<chainId>/transfer?address=<to>&uint256=<amount>` (EIP-681, an ERC-20 transfer). */
export const eip681 = (token: string, chainId: number, to: string, amount: bigint) => `ethereum:${token}@${chainId}/transfer?address=${to}&uint256=${amount}`;
