// The payment explorer over the transaction API: payments by recipient, the payments of one transaction
// (where the checkout links a paid intent), or the newest payments, each attestation verified here in the
// browser (EIP-712 recover of its signature must give the attestation signer the API publishes, and the
// record the row shows must agree with what was signed). Paging is by cursor only, never by page number:
// recipient sequence for a recipient, the last paymentId shown (`before`) for the newest payments.
import { recoverTypedDataAddress, type Hex, type TypedDataDomain } from 'viem';
import { dataTable, field, h, mount, notice } from '../shared/dom.js';
import { shortHex, units, when } from '../shared/format.js';
import { json } from '../shared/http.js';

interface TxRecord {
  from: string;
  to: string;
  transactionHash: string;
  value: string;
  tokenAddress: string;
  tokenSymbol: string;
  tokenDecimals: number;
  blockTimestamp: number;
  chainId: number;
  attestation: { paymentId: Hex; payer: Hex; recipient: Hex; recipientSequence: string; token: Hex; amount: string };
  signature: Hex;
  signer: string;
}
interface AttestationInfo { domain: TypedDataDomain; types: Record<string, { name: string; type: string }[]>; primaryType: string; signer: string }

const PAGE_SIZE = 10;
/** A transaction's payments not published yet: looked for again this often, this many times (a minute). */
const LOOK_AGAIN_MS = 3000;
const LOOKS = 20;

/** The record's fields a row shows that the attestation signs, each beside its name in the attestation. */
const SIGNED = [
  ['from', 'payer'],
  ['to', 'recipient'],
  ['value', 'amount'],
  ['tokenAddress', 'token'],
] as const satisfies readonly (readonly [keyof TxRecord, keyof TxRecord['attestation']])[];

/**
 * Whether the record's signature recovers to the signer the API publishes (and the record names), and
 * which shown fields differ from the signed attestation: a valid signature vouches only for what it signs.
 */
export async function verify(record: TxRecord, info: AttestationInfo): Promise<{ signed: boolean; differs: string[]; recovered: string }> {
  const a = record.attestation;
  const recovered = await recoverTypedDataAddress({
    domain: { ...info.domain, chainId: record.chainId },
    types: { PaymentAttestation: info.types.PaymentAttestation! },
    primaryType: 'PaymentAttestation',
    message: { ...a, recipientSequence: BigInt(a.recipientSequence), amount: BigInt(a.amount) },
    signature: record.signature,
  });
  const signed = recovered.toLowerCase() === info.signer.toLowerCase() && record.signer.toLowerCase() === info.signer.toLowerCase();
  // Addresses compare case-insensitively (EIP-55 case is a checksum, not a different address); amounts exactly.
  const differs = SIGNED.filter(([shown, inAttestation]) => String(record[shown]).toLowerCase() !== String(a[inAttestation]).toLowerCase()).map(([shown]) => shown);
  return { signed, differs, recovered };
}

function badge(v: { signed: boolean; differs: string[]; recovered: string }): HTMLElement {
  if (!v.signed) return h('span', { class: 'badge mismatch', title: `recovered ${v.recovered}` }, 'signature mismatch');
  if (v.differs.length > 0) return h('span', { class: 'badge mismatch', title: `The signature is valid, but the record's ${v.differs.join(', ')} ${v.differs.length > 1 ? 'differ' : 'differs'} from the signed attestation` }, 'record differs from attestation');
  return h('span', { class: 'badge verified', title: `recovered ${v.recovered}` }, 'verified');
}

export async function explorerPage(root: HTMLElement, query: URLSearchParams, looks = 0): Promise<void> {
  const recipient = query.get('recipient') ?? '';
  const after = query.get('after');
  const before = query.get('before');
  const transaction = query.get('transaction');
  const info = await json<AttestationInfo>('GET', '/x402scan/attestation');
  const chain = String(info.domain.chainId);
  const params = new URLSearchParams({ pageSize: String(PAGE_SIZE), chain });
  if (transaction) {
    // One transaction's payments (to `recipient` when named), found by hash whatever their age; a
    // transaction carries one payment, or a batch's.
    params.set('transactionHash', transaction);
    params.set('pageSize', '100');
    if (recipient) params.set('recipient', recipient);
  } else if (recipient) {
    params.set('recipient', recipient);
    params.set('afterSequence', after ?? '0');
  } else if (before) params.set('before', before);
  const records = await json<TxRecord[]>('GET', `/x402scan/transactions?${params}`);
  // Settled moments ago, a payment is published once its block is final: look again for a while.
  if (transaction && records.length === 0 && looks < LOOKS) {
    const shown = location.hash;
    setTimeout(() => void (location.hash === shown && explorerPage(root, query, looks + 1).catch(() => {})), LOOK_AGAIN_MS);
  }

  const input = h('input', { name: 'recipient', value: recipient, pattern: '0x[0-9a-fA-F]{40}', spellcheck: 'false', autocomplete: 'off', size: 44, placeholder: '0x…' });
  const go = (next: Record<string, string>) => (location.hash = `#/explorer?${new URLSearchParams(next)}`);
  const rows = await Promise.all(records.map(async (r) => ({ r, v: await verify(r, info).catch(() => ({ signed: false, differs: [], recovered: 'unrecoverable' })) })));
  mount(
    root,
    h('h1', {}, 'Payment explorer'),
    h(
      'form',
      { class: 'card inline', role: 'search', onsubmit: (e: Event) => (e.preventDefault(), go(input.value.trim() ? { recipient: input.value.trim() } : {})) },
      field('Recipient address', input, 'Payments to this address in the order they were indexed; leave empty for the newest payments to anyone.'),
      h('button', { type: 'submit' }, 'Search'),
    ),
    h('p', { class: 'muted' }, 'Attestations are signed by ', h('code', {}, info.signer), ` (${info.domain.name} v${info.domain.version}). Each row is checked in this browser: its payer, recipient, token and amount must be the signed ones. The transaction hash and time are not covered by the attestation.`),
    rows.length === 0
      ? notice(
          'info',
          transaction
            ? `No published payment in transaction ${transaction} yet. A payment is published once its block is final, a few seconds after it settles${looks < LOOKS ? '; this page looks again by itself' : ''}.`
            : recipient
              ? 'No payments to this address after this point yet.'
              : 'No payments indexed yet.',
        )
      : dataTable(
          ['#', 'Time', 'From', 'To', 'Amount', 'Transaction', 'Attestation'],
          rows.map(({ r, v }) => ({
            attrs: { 'data-payment-id': r.attestation.paymentId },
            cells: [
              r.attestation.recipientSequence,
              when(new Date(r.blockTimestamp * 1000).toISOString()),
              h('code', { title: r.from }, shortHex(r.from)),
              h('a', { href: `#/explorer?recipient=${r.to}`, title: r.to }, shortHex(r.to)),
              `${units(r.value, r.tokenDecimals)} ${r.tokenSymbol}`,
              h('code', { title: r.transactionHash }, shortHex(r.transactionHash)),
              badge(v),
            ],
          })),
          transaction ? `Payments in transaction ${transaction}${recipient ? ` to ${recipient}` : ''}` : recipient ? `Payments to ${recipient}` : 'Newest payments',
        ),
    h(
      'div',
      { class: 'row pager' },
      transaction
        ? null
        : recipient
          ? [
              after && after !== '0' ? h('button', { type: 'button', class: 'secondary', onclick: () => go({ recipient }) }, 'From the first') : null,
              records.length === PAGE_SIZE ? h('button', { type: 'button', class: 'secondary', onclick: () => go({ recipient, after: records.at(-1)!.attestation.recipientSequence }) }, 'Next payments') : null,
            ]
          : [
              // Older pages continue after the last row shown, so payments arriving meanwhile neither repeat nor hide a row.
              before ? h('button', { type: 'button', class: 'secondary', onclick: () => go({}) }, 'Newest') : null,
              records.length === PAGE_SIZE ? h('button', { type: 'button', class: 'secondary', onclick: () => go({ before: records.at(-1)!.attestation.paymentId }) }, 'Older') : null,
            ],
    ),
  );
}
