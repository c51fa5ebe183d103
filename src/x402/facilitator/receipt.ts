// What a mined settlement transaction proves. USDG's quirk makes "status: success" meaningless on its
// own (a reused nonce succeeds and moves nothing), so success needs both logs from the token:
// AuthorizationUsed(payer, nonce) and Transfer(payer, payTo, amount).
import { getAddress, parseEventLogs, type Log } from 'viem';
import { eip3009Abi } from '../../chain/eip3009.js';
import { Reason } from './reasons.js';

export interface ExpectedTransfer {
  asset: string;
  payer: string;
  payTo: string;
  amount: string;
  nonce: string;
}

export type ReceiptVerdict = { ok: true } | { ok: false; reason: string; message: string };

export function judgeReceipt(receipt: { status: string; logs: readonly Log[] }, expected: ExpectedTransfer): ReceiptVerdict {
  if (receipt.status !== 'success') {
    return { ok: false, reason: Reason.transactionFailed, message: 'settlement transaction reverted' };
  }
  const asset = getAddress(expected.asset);
  const payer = getAddress(expected.payer);
  const nonce = expected.nonce.toLowerCase();
  const logs = parseEventLogs({ abi: eip3009Abi, logs: receipt.logs as Log[] }).filter((l) => getAddress(l.address) === asset);
  const authLog = (name: string) =>
    logs.some(
      (l) =>
        l.eventName === name &&
        getAddress((l.args as { authorizer: string }).authorizer) === payer &&
        (l.args as { nonce: string }).nonce.toLowerCase() === nonce,
    );
  const used = authLog('AuthorizationUsed');
  const moved = logs.some((l) => {
    if (l.eventName !== 'Transfer') return false;
    const { from, to, value } = l.args as { from: string; to: string; value: bigint };
    return getAddress(from) === payer && getAddress(to) === getAddress(expected.payTo) && value === BigInt(expected.amount);
  });
  if (used && moved) return { ok: true };
  if (authLog('AuthorizationAlreadyUsed')) {
    return { ok: false, reason: Reason.nonceAlreadyUsed, message: 'the token reported the authorization as already used; nothing moved' };
  }
  return { ok: false, reason: Reason.transferEventMismatch, message: 'no matching AuthorizationUsed and Transfer logs in the receipt' };
}
