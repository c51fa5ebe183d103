import { getAddress, parseAbi, parseEventLogs, type Address, type Hex, type Log } from 'viem';

export const paymentEvents = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
]);
export const authorizationUsedEvent = paymentEvents[1];

/** A payment found in one transaction's logs, before block facts are attached. */
export interface PairedPayment {
  token: Address;
  payer: Address;
  recipient: Address;
  value: bigint;
  nonce: Hex;
  /** Index of the Transfer log: the payment's position in the chain. */
  logIndex: number;
}

/**
 * Pairs each `AuthorizationUsed(authorizer, nonce)` with the next `Transfer` of the same token from
 * that authorizer in the same transaction. USDG emits AuthorizationAlreadyUsed (and no Transfer) for
 * a reused nonce, and a bare Transfer proves no authorization, so only pairs count as payments.
 */
export function pairPaymentLogs(logs: readonly Log[], tokens: ReadonlySet<string>): PairedPayment[] {
  const ours = logs.filter((log) => tokens.has(log.address.toLowerCase()) && !log.removed);
  const decoded = parseEventLogs({ abi: paymentEvents, logs: ours, strict: true }).sort(
    (a, b) => (a.logIndex ?? 0) - (b.logIndex ?? 0),
  );
  const pending = new Map<string, Hex[]>();
  const payments: PairedPayment[] = [];
  for (const log of decoded) {
    const token = getAddress(log.address);
    if (log.eventName === 'AuthorizationUsed') {
      const key = `${token}:${getAddress(log.args.authorizer)}`;
      pending.set(key, [...(pending.get(key) ?? []), log.args.nonce.toLowerCase() as Hex]);
      continue;
    }
    const payer = getAddress(log.args.from);
    const queue = pending.get(`${token}:${payer}`);
    const nonce = queue?.shift();
    if (!nonce) continue;
    payments.push({ token, payer, recipient: getAddress(log.args.to), value: log.args.value, nonce, logIndex: log.logIndex! });
  }
  return payments;
}
