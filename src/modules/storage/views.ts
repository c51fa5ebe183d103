import { isoDate } from '../../platform/http/schemas.js';
import type { OrderView } from './schemas.js';
import type { OrderRow } from './store.js';

/** The canonical upload URL of an order: the resource its payment is bound to. */
export const paymentUrlOf = (baseUrl: string, orderId: string) => `${baseUrl}/v1/ipfs/upload?orderId=${orderId}`;

/** Where the assets origin serves a CID. Callers use the order's `url`; they never build one. */
export const imageUrlOf = (assetsUrl: string, cid: string) => `${assetsUrl}/ipfs/${cid}`;

/**
 * Row → order. The image fields exist only while the order is fulfilled (never partial, gone after
 * expiry); an order past its retention reads as expired even before the sweep moves it.
 */
export function orderView(row: OrderRow, urls: { api: string; assets: string }, now: Date): OrderView {
  const lapsed = row.status === 'fulfilled' && row.expiresAt !== null && row.expiresAt <= now;
  const served = row.status === 'fulfilled' && !lapsed && row.cid ? row.cid : null;
  return {
    id: row.id,
    status: lapsed ? 'expired' : row.status,
    amountAtomic: row.amount,
    retentionDays: row.retentionDays,
    transactionHash: row.transactionHash,
    quoteExpiresAt: row.quoteExpiresAt.toISOString(),
    expiresAt: isoDate(row.expiresAt),
    paymentUrl: paymentUrlOf(urls.api, row.id),
    cid: served,
    ipfsUri: served && `ipfs://${served}`,
    url: served && imageUrlOf(urls.assets, served),
  };
}
