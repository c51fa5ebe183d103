import { ApiError, notFound } from '../../platform/http/errors.js';

// Errors of projects and merchants (envelope family): the envelope carries the HTTP status's numeric code;
// `data.reason` the specific snake_case reason, as in the Events area.

const withReason = (status: number, reason: string, message: string, extra: Record<string, unknown> = {}) =>
  new ApiError(status, reason, message, { reason, ...extra });

export const projectErrors = {
  /** Another user's project answers as if it did not exist (data stays null, as it always has). */
  projectNotFound: () => notFound('Project not found', 'project_not_found'),
  merchantNotFound: () => withReason(404, 'merchant_not_found', 'Merchant not found in this project'),
  /** The credential is not a live credential of that wallet (or the wallet does not exist): nothing tells which. */
  refundWalletNotFound: () => withReason(404, 'refund_wallet_not_found', 'No wallet with that id answers to this wallet credential'),
  refundWalletNotActive: (status: string) => withReason(409, 'wallet_not_active', `The wallet is ${status}; only an active wallet can pay refunds`, { status }),
  merchantNameTaken: (merchantId: string | null) =>
    withReason(409, 'merchant_name_taken', 'A merchant with this name already exists in the project', { merchantId }),
};
