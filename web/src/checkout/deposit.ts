// Paying from any wallet or exchange (docs/intents.md#deposit-addresses): the intent's own deposit address, the
// amount still due and an EIP-681 QR code of that transfer, so a phone wallet scans it and an exchange withdraws to
// it. A plain USDG transfer is all it takes; the page turns paid once the chain has it (it polls anyway).
import { h } from '../shared/dom.js';
import { networkName, tokenAmount } from '../shared/format.js';
import { copyable } from './copy.js';
import { qrCode } from './qr.js';

export interface DepositView {
  address: string;
  /** Atomic units still due. */
  due: string;
  /** ethereum:<token>@<chainId>/transfer?address=<deposit>&uint256=<due> */
  uri: string;
}

export interface DepositTarget {
  deposit: DepositView;
  network: string;
  asset: string;
  /** The intent's whole amount, atomic units. */
  amount: string;
}

/** What the URI must say for the page to show it as a QR code: exactly this transfer and nothing else. */
const expectedUri = (t: DepositTarget) => `ethereum:${t.asset}@${t.network.split(':')[1]}/transfer?address=${t.deposit.address}&uint256=${t.deposit.due}`;

export function depositSection(target: DepositTarget, open: boolean): HTMLElement | null {
  const { deposit } = target;
  if (!/^0x[0-9a-fA-F]{40}$/.test(deposit.address) || !/^\d+$/.test(deposit.due) || deposit.due === '0') return null;
  const due = tokenAmount(deposit.due, target.network, target.asset);
  const partly = deposit.due !== target.amount;
  // Built here from what the page shows, never taken on trust: a different URI is not drawn.
  const qr = deposit.uri === expectedUri(target) ? qrCode(deposit.uri, `QR code of a transfer of ${due} to ${deposit.address} on ${networkName(target.network)}`) : null;
  return h(
    'details',
    { class: 'deposit', ...(open ? { open: true } : {}) },
    h('summary', {}, 'Pay from any wallet or exchange'),
    h('p', {}, `Send exactly `, h('strong', { 'data-testid': 'deposit-due' }, due), ` on `, h('strong', {}, networkName(target.network)), ` to this address, from any wallet or exchange. This page turns paid once the transfer is on chain.`),
    partly ? h('p', { class: 'muted', 'data-testid': 'deposit-partial' }, `Part of it has arrived already: ${due} is still due of ${tokenAmount(target.amount, target.network, target.asset)}.`) : null,
    qr ? h('div', { class: 'qr' }, qr) : null,
    copyable(h('code', { 'data-testid': 'deposit-address' }, deposit.address), deposit.address, 'the deposit address'),
    copyable(h('span', {}, due), deposit.due === '0' ? '' : due.split(' ')[0]!, 'the amount'),
    h('p', { class: 'muted' }, `Only USDG on ${networkName(target.network)}: anything else sent here is lost. Sending more than is due, or after the request has expired, is recorded for the merchant to refund.`),
  );
}
