import { decodePaymentResponseHeader } from '@x402/core/http';
import { describe, expect, it } from 'vitest';
import { encodeSettlementHeader } from './headers.js';

describe('encodeSettlementHeader', () => {
  it('gives one settlement the same header whatever its key order (jsonb reorders keys on the way back)', () => {
    const inMemory = { success: true, transaction: '0xabc', network: 'eip155:4663', payer: '0x01' } as const;
    const readBack = { payer: '0x01', network: 'eip155:4663', success: true, transaction: '0xabc' } as const;
    expect(encodeSettlementHeader(readBack)).toBe(encodeSettlementHeader(inMemory));
    expect(decodePaymentResponseHeader(encodeSettlementHeader(readBack))).toEqual(inMemory);
  });
});
