// Where a settled payment is in the payment explorer (web/src/app/explorer.ts). Its URL scheme names a
// recipient and a cursor, `/app/#/explorer?recipient=0x…&after=N`, listing that recipient's payments from
// recipientSequence N+1: with N one below this payment's sequence, it is the first row. The sequence is
// read from the transaction API (the recipient's newest payments), once the indexer has it.
import { json } from '../shared/http.js';

interface IndexedPayment {
  transactionHash: string;
  to: string;
  attestation: { recipientSequence: string };
}

/** The recipient's payments in the explorer: where the link points until the payment is indexed. */
export const recipientHref = (payTo: string) => `/app/#/explorer?${new URLSearchParams({ recipient: payTo })}`;

/** The explorer page that shows this payment first; null while the transaction API does not list it yet. */
export async function paymentHref(payTo: string, network: string, transactionHash: string): Promise<string | null> {
  const query = new URLSearchParams({ recipient: payTo, chain: network, pageSize: '100' });
  const payments = await json<IndexedPayment[]>('GET', `/x402scan/transactions?${query}`);
  const found = payments.find((p) => p.transactionHash.toLowerCase() === transactionHash.toLowerCase() && p.to.toLowerCase() === payTo.toLowerCase());
  if (!found) return null;
  const after = BigInt(found.attestation.recipientSequence) - 1n;
  return `/app/#/explorer?${new URLSearchParams({ recipient: payTo, after: String(after < 0n ? 0n : after) })}`;
}
