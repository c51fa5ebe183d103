// What a mined settlement transaction proves, in the facilitator's reason codes. The judgment itself is
// the one every path shares (judgePayment): only the Transfer paired with this authorization's own
// AuthorizationUsed log counts, and it must move exactly this payment.
import type { Log } from 'viem';
import { judgePayment, type ExpectedPayment } from '../../chain/payment-check.js';
import { Reason } from './reasons.js';

export type ReceiptVerdict = { ok: true; logIndex: number } | { ok: false; reason: string; message: string };

export function judgeReceipt(receipt: { status: string; logs: readonly Log[] }, expected: ExpectedPayment): ReceiptVerdict {
  const judgment = judgePayment(receipt, expected);
  switch (judgment.kind) {
    case 'paid':
      return { ok: true, logIndex: judgment.logIndex };
    case 'reverted':
      return { ok: false, reason: Reason.transactionFailed, message: 'settlement transaction reverted' };
    case 'already_used':
      return { ok: false, reason: Reason.nonceAlreadyUsed, message: 'the token reported the authorization as already used; nothing moved' };
    case 'mismatch':
      return { ok: false, reason: Reason.nonceAlreadyUsed, message: `the authorization was used to move ${judgment.value} to ${judgment.recipient}, not this payment` };
    case 'absent':
      return { ok: false, reason: Reason.transferEventMismatch, message: 'no matching AuthorizationUsed and Transfer logs in the receipt' };
  }
}
