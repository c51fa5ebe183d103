import { encodeFunctionData, erc20Abi, getAddress, keccak256, WaitForTransactionReceiptTimeoutError, type Hash, type Hex } from 'viem';
import type { AppContext } from '../../context.js';
import { PERMIT2_ADDRESS } from '../../chain/x402-contracts.js';
import { isTransportError } from '../../chain/errors.js';
import { ApiError, conflict } from '../../platform/http/errors.js';
import { gasWithin, GasCeilingError } from '../../x402/facilitator/gas-ceiling.js';
import { signerOrRefuse, type WalletProvider } from './provider.js';
import type { Permit2ApprovalView } from './schemas.js';
import type { WalletRow } from './store.js';

/**
 * An ERC-20 approve costs about 46,000 gas the first time (a new allowance slot) and less after: the limit is
 * the estimate plus headroom, never above this (gas-ceiling.ts, the facilitator's rule). A token that needs more
 * is not one we approve blind.
 */
export const APPROVE_GAS_CEILING = 100_000n;
/** How long the request waits for the approval to be mined before answering 202 `pending` with its hash. */
const RECEIPT_WAIT_MS = 30_000;

/**
 * POST /v1/wallets/me/permit2-approval: the wallet approves Permit2 for the chain's asset (`approve(Permit2,
 * amount)`), which every `upto` payment needs (permit2-allowance.ts refuses them without it). Unlike a payment this is
 * the wallet's own transaction: it pays the gas in the chain's native coin, so the route is refused unless the
 * wallet holds enough for the worst case. The steps, cheapest refusals first:
 *   1. the allowance already is `amount` → nothing sent (also what a repeat finds after a crash mid-send: approve
 *      sets the allowance, it does not add to it, so a second send could only waste gas);
 *   2. the gas limit is decided before sending (estimate + headroom, at most APPROVE_GAS_CEILING) and the worst cost
 *      (limit × maxFeePerGas) must be in the wallet's native balance: 409 otherwise, nothing signed;
 *   3. signed here (the hash is known before the node answers), sent once; its receipt decides the answer. A send
 *      whose answer was lost is 202 `pending` with that hash, never sent again by a repeat of the key.
 * The route takes an Idempotency-Key (required): a repeat with the same key answers the first answer.
 */
export class Permit2Approval {
  constructor(
    private readonly ctx: AppContext,
    private readonly provider: WalletProvider,
  ) {}

  async run(wallet: WalletRow, amount: bigint): Promise<{ status: 200 | 202; view: Permit2ApprovalView }> {
    if (wallet.status !== 'active' || !wallet.keyRef || !wallet.address) {
      throw conflict(`The wallet is ${wallet.status}; only an active wallet can send a transaction`, 'wallet_not_active', { status: wallet.status });
    }
    const { publicClient: client, asset, network, viemChain } = this.ctx.chain;
    const owner = getAddress(wallet.address);
    const base = { network, asset: asset.address, spender: PERMIT2_ADDRESS, amount: amount.toString() };
    const allowance = await client.readContract({ address: asset.address, abi: erc20Abi, functionName: 'allowance', args: [owner, PERMIT2_ADDRESS] });
    if (allowance === amount) return { status: 200, view: { ...base, status: 'unchanged', allowance: allowance.toString(), transaction: null, gasLimit: null } };

    const call = { account: owner, to: asset.address, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [PERMIT2_ADDRESS, amount] }) };
    const gas = await gasWithin(client, call, APPROVE_GAS_CEILING).catch((error: unknown) => {
      if (error instanceof GasCeilingError) {
        throw conflict(`The approval needs more gas than the ceiling of ${APPROVE_GAS_CEILING}; nothing was sent`, 'gas_over_ceiling', { reason: 'gas_over_ceiling', ceiling: APPROVE_GAS_CEILING.toString() });
      }
      if (isTransportError(error)) throw error;
      throw new ApiError(502, 'approval_failed', `The token refuses the approval: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}; nothing was sent`);
    });
    const fees = await client.estimateFeesPerGas().catch(async () => ({ gasPrice: await client.getGasPrice() }));
    const perGas = 'maxFeePerGas' in fees && fees.maxFeePerGas !== undefined ? fees.maxFeePerGas : (fees as { gasPrice: bigint }).gasPrice;
    const worst = gas * perGas;
    const native = await client.getBalance({ address: owner });
    if (native < worst) {
      throw conflict(
        `The wallet pays the approval's gas and holds ${native} wei of the chain's native coin, less than the ${worst} wei it may cost (gas limit ${gas}); nothing was sent`,
        'insufficient_gas',
        { reason: 'insufficient_gas', balance: native.toString(), required: worst.toString(), gasLimit: gas.toString() },
      );
    }

    const signer = await signerOrRefuse(this.provider, { id: wallet.id, keyRef: wallet.keyRef }, this.ctx.log, 'Signing failed: the wallet key is unavailable; nothing was sent');
    const nonce = await client.getTransactionCount({ address: owner, blockTag: 'pending' });
    const feeFields =
      'maxFeePerGas' in fees && fees.maxFeePerGas !== undefined ? { type: 'eip1559' as const, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas! } : { type: 'legacy' as const, gasPrice: perGas };
    const raw: Hex = await signer.signTransaction({ chainId: viemChain.id, nonce, to: call.to, data: call.data, gas, ...feeFields });
    const hash: Hash = keccak256(raw);
    this.ctx.log.info({ walletId: wallet.id, transaction: hash, amount: amount.toString(), gas: gas.toString() }, 'wallet approving Permit2');

    const pending = { status: 202 as const, view: { ...base, status: 'pending' as const, allowance: allowance.toString(), transaction: hash, gasLimit: gas.toString() } };
    try {
      await client.sendRawTransaction({ serializedTransaction: raw }).catch((error: unknown) => {
        // A transport's own retry of these same bytes: the node has them.
        if (!(error instanceof Error && /already known/i.test(error.message))) throw error;
      });
    } catch (error) {
      // The node refused it outright (not sent): nothing happened, the caller may try again.
      if (!isTransportError(error)) throw new ApiError(502, 'approval_failed', `The node refused the approval: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}; nothing was sent`);
      // The answer was lost: it may be on its way. Answered with its hash; a repeat of the key gets this answer.
      this.ctx.log.warn({ walletId: wallet.id, transaction: hash, err: error }, 'Permit2 approval: the send answer was lost');
      return pending;
    }
    try {
      const receipt = await client.waitForTransactionReceipt({ hash, timeout: RECEIPT_WAIT_MS });
      // viem answers with the receipt of a transaction that took this one's nonce (another approval of the same
      // wallet, sent at a higher fee from another node): ours was never mined, so it must not read as confirmed.
      if (receipt.transactionHash !== hash) {
        throw conflict(
          `The approval ${hash} was replaced by ${receipt.transactionHash}, another transaction of the wallet at the same nonce; it was never mined. Read the allowance, or send a new Idempotency-Key to try again`,
          'approval_replaced',
          { reason: 'approval_replaced', transaction: hash, replacedBy: receipt.transactionHash },
        );
      }
      if (receipt.status !== 'success') {
        // A 4xx, so the key keeps it: a retry of the key answers this, never sending (and paying gas for) another.
        throw conflict(`The approval ${hash} reverted on chain; its gas was spent and the allowance is unchanged. Send a new Idempotency-Key to try again`, 'approval_reverted', { reason: 'approval_reverted', transaction: hash });
      }
    } catch (error) {
      if (error instanceof WaitForTransactionReceiptTimeoutError || isTransportError(error)) return pending;
      throw error;
    }
    const after = await client.readContract({ address: asset.address, abi: erc20Abi, functionName: 'allowance', args: [owner, PERMIT2_ADDRESS] });
    return { status: 200, view: { ...base, status: 'confirmed', allowance: after.toString(), transaction: hash, gasLimit: gas.toString() } };
  }
}

