// x402 reason codes our facilitator returns in `invalidReason` / `errorReason`. The exact-EVM ones are
// the @x402/evm scheme's own strings (the package exports no constants); the rest are x402 v2's
// generic codes plus `settlement_pending`, which the SDK's resource server retries once.
export const Reason = {
  // request-level (returned before the scheme runs)
  invalidX402Version: 'invalid_x402_version',
  invalidPayload: 'invalid_payload',
  invalidPaymentRequirements: 'invalid_payment_requirements',
  invalidNetwork: 'invalid_network',
  unsupportedScheme: 'unsupported_scheme',
  unsupportedPayloadType: 'unsupported_payload_type',
  // exact EVM (EIP-3009)
  invalidScheme: 'invalid_exact_evm_scheme',
  networkMismatch: 'invalid_exact_evm_network_mismatch',
  missingEip712Domain: 'invalid_exact_evm_missing_eip712_domain',
  recipientMismatch: 'invalid_exact_evm_recipient_mismatch',
  invalidSignature: 'invalid_exact_evm_signature',
  validBefore: 'invalid_exact_evm_payload_authorization_valid_before',
  validAfter: 'invalid_exact_evm_payload_authorization_valid_after',
  valueMismatch: 'invalid_exact_evm_payload_authorization_value_mismatch',
  nonceAlreadyUsed: 'invalid_exact_evm_nonce_already_used',
  insufficientBalance: 'invalid_exact_evm_insufficient_balance',
  simulationFailed: 'invalid_exact_evm_transaction_simulation_failed',
  transactionFailed: 'invalid_exact_evm_transaction_failed',
  transferEventMismatch: 'invalid_exact_evm_transfer_event_mismatch',
  tokenNameMismatch: 'invalid_exact_evm_token_name_mismatch',
  tokenVersionMismatch: 'invalid_exact_evm_token_version_mismatch',
  assetNotContract: 'asset_not_deployed_contract',
  // gas is money: a payer whose signature check runs its own code (refused unless allowed), and a
  // settlement that needs more gas than this facilitator's ceiling. Both refused before anything is sent.
  payerHasCode: 'payer_has_code',
  gasOverCeiling: 'gas_over_ceiling',
  // settlement outcome not known yet: the transaction may be in flight; retry the same settle later.
  settlementPending: 'settlement_pending',
  // x402 payment-identifier: the id was first used with another payload (HTTP 409 on our origin).
  paymentIdentifierConflict: 'payment_identifier_conflict',
} as const;

export type ReasonCode = (typeof Reason)[keyof typeof Reason];

// Our words for the refusals the SDK's exact scheme gives. Its own messages are raw library text (a viem
// error's URL with the RPC key in its path, the request body, the signature in the call arguments), which
// must reach neither a caller nor a log line.
const OWN_WORDS: Record<string, string> = {
  [Reason.invalidScheme]: 'the payload is not an exact EVM payment',
  [Reason.networkMismatch]: 'the payment is for another network',
  [Reason.missingEip712Domain]: 'the requirements name no EIP-712 domain (extra.name, extra.version)',
  [Reason.recipientMismatch]: 'the authorization pays another address than payTo',
  [Reason.invalidSignature]: "the signature is not the payer's over these terms",
  [Reason.validBefore]: 'the authorization has expired (validBefore)',
  [Reason.validAfter]: 'the authorization is not valid yet (validAfter)',
  [Reason.valueMismatch]: 'the authorization does not move exactly the required amount',
  [Reason.nonceAlreadyUsed]: 'the authorization is already used or canceled',
  [Reason.insufficientBalance]: "the payer's balance does not cover the amount",
  [Reason.simulationFailed]: 'the transfer would fail on chain',
  [Reason.transactionFailed]: 'the settlement transaction failed',
  [Reason.transferEventMismatch]: 'the settlement moved nothing for this payment',
  [Reason.tokenNameMismatch]: "the EIP-712 domain name is not the token's",
  [Reason.tokenVersionMismatch]: "the EIP-712 domain version is not the token's",
  [Reason.assetNotContract]: 'the asset is not a deployed contract',
  [Reason.payerHasCode]: "the payer is a contract (or a delegated account): its signature check runs its own code at the relayer's gas, and this facilitator does not settle for such payers",
  [Reason.gasOverCeiling]: "the settlement needs more gas than this facilitator's ceiling; nothing was sent",
  // Permit2 (exact over Permit2, upto): the SDK's codes.
  invalid_permit2_spender: "the permit's spender is not the x402 proxy of this scheme",
  invalid_permit2_recipient_mismatch: "the permit's witness pays another address than payTo",
  invalid_permit2_signature: "the signature is not the payer's over this permit",
  permit2_deadline_expired: 'the permit has expired (deadline)',
  permit2_not_yet_valid: 'the permit is not valid yet (validAfter)',
  permit2_amount_mismatch: 'the permit does not move exactly the required amount',
  permit2_token_mismatch: 'the permit is for another token',
  permit2_allowance_required: 'the payer has not approved Permit2 for this token',
  permit2_insufficient_balance: "the payer's balance does not cover the amount",
  permit2_simulation_failed: 'the settlement would fail on chain',
  permit2_invalid_nonce: "the permit's nonce is already used or invalidated",
  permit2_proxy_not_deployed: 'the x402 Permit2 proxy is not deployed on this chain',
  invalid_upto_evm_scheme: 'the payload is not an upto payment',
  invalid_upto_evm_network_mismatch: 'the payment is for another network',
  invalid_upto_evm_payload_settlement_exceeds_amount: 'the settled amount is above what the payer permitted',
  invalid_upto_evm_transaction_failed: 'the settlement transaction failed',
  upto_facilitator_mismatch: "the permit names another facilitator: only that relayer key may settle it",
};

/** A refusal of the SDK's, in our words: its reason code kept, its message replaced. */
export function ownWords(reason: string | undefined): string {
  return (reason && OWN_WORDS[reason]) || 'the payment was refused';
}
