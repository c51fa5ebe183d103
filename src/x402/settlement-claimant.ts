// Who holds a transfer bought through an x402 settle (chain_payment_uses.claimant): the settle call named
// by its payment-identifier, so the facilitator's success and a module's later grant from the chain agree
// when they are the same purchase, and collide when a copy of the payload took the success. A leaf: the
// ledger (facilitator/ledger.ts) names its claims with it, so it takes the two fields it reads, not the ledger's
// SettlementKey.

export const settleClaimant = (paymentId: string): string => `x402-settlement:${paymentId}`;

/** A settle without a payment-identifier: only the authorization names it. */
export const anonymousSettleClaimant = (key: { payer: string; nonce: string }): string => `x402-settlement:anonymous:${key.payer}:${key.nonce}`;
