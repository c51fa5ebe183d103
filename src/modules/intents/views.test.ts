import { describe, expect, it } from 'vitest';
import { failureMoneyMovedOf } from './views.js';

describe('failureMoneyMovedOf', () => {
  it('says none only for settle refusals, not_for_this_intent after a transfer that paid something else, else unknown', () => {
    const failed = (failureCode: string | null) => failureMoneyMovedOf({ status: 'failed', failureCode });
    for (const code of ['invalid_exact_evm_signature', 'invalid_exact_evm_insufficient_balance', 'invalid_exact_evm_transaction_failed', 'invalid_payload']) expect(failed(code)).toBe('none');
    for (const code of ['settlement_mismatch', 'payment_already_used']) expect(failed(code)).toBe('not_for_this_intent');
    for (const code of ['invalid_exact_evm_nonce_already_used', 'invalid_exact_evm_transfer_event_mismatch', 'settlement_pending', 'something_new', null]) expect(failed(code)).toBe('unknown');
    expect(failureMoneyMovedOf({ status: 'settled', failureCode: null })).toBeNull();
    expect(failureMoneyMovedOf({ status: 'pending', failureCode: 'authorization_expired' })).toBeNull();
  });
});
