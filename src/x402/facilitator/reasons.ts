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
  // settlement outcome not known yet: the transaction may be in flight; retry the same settle later.
  settlementPending: 'settlement_pending',
  // x402 payment-identifier: the id was first used with another payload (HTTP 409 on our origin).
  paymentIdentifierConflict: 'payment_identifier_conflict',
} as const;

export type ReasonCode = (typeof Reason)[keyof typeof Reason];
