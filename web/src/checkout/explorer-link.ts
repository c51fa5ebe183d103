// Where a settled payment is in the payment explorer (web/src/app/explorer.ts): its view of one transaction,
// narrowed to the payee, `/app/#/explorer?transaction=0x…&recipient=0x…`. The transaction hash is the
// payment's own, so the link holds however many payments the merchant receives after it, and it needs no
// lookup here: while the payment is not published yet (its block not final), the explorer says so and looks again.

/** The explorer's page of this payment: the transaction that settled it, to this payee. */
export const paymentHref = (transactionHash: string, payTo: string) =>
  `/app/#/explorer?${new URLSearchParams({ transaction: transactionHash, recipient: payTo })}`;
