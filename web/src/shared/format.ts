export const usd = (cents: number) => `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

/** Dollars as typed ("12", "12.5", "12.50") to whole cents; null when it is not such an amount. */
export function usdCents(text: string): number | null {
  const match = /^(\d{1,9})(?:\.(\d{1,2}))?$/.exec(text.trim());
  return match ? Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0')) : null;
}

/** Atomic token units as a decimal string ("1234500", 6 → "1.2345"). */
export function units(atomic: string, decimals: number): string {
  const padded = atomic.padStart(decimals + 1, '0');
  const whole = padded.slice(0, -decimals);
  const fraction = padded.slice(-decimals).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

export const shortHex = (hex: string, keep = 6) => (hex.length > 2 * keep + 2 ? `${hex.slice(0, keep + 2)}…${hex.slice(-keep)}` : hex);

export const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString('en-US', { dateStyle: 'medium', timeStyle: 'short' }) : '—');

/** "in 4 min", "3 h ago". */
export function relative(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  return seconds >= 0 ? `in ${span(seconds)}` : `${span(-seconds)} ago`;
}

/** An expiry time as people say it, from `now`: "Expires in 4 min", then "Expired 3 min ago" once past. */
export function expiry(iso: string, now = Date.now()): string {
  const ms = new Date(iso).getTime() - now;
  return ms > 0 ? `Expires in ${span(Math.ceil(ms / 1000))}` : `Expired ${span(Math.floor(-ms / 1000))} ago`;
}

/** Whole seconds as the unit people read them in: 42 s, 5 min, 3 h, 2 d. */
function span(seconds: number): string {
  return seconds < 60 ? `${seconds} s` : seconds < 3600 ? `${Math.round(seconds / 60)} min` : seconds < 86_400 ? `${Math.round(seconds / 3600)} h` : `${Math.round(seconds / 86_400)} d`;
}

/**
 * Tokens the pages name by symbol. The server's list is src/chain/registry.ts (ASSETS), which the pages do
 * not bundle (it pulls in viem); test/web/wallet-policy.test.ts fails when the two differ.
 */
export const KNOWN_ASSETS: readonly { network: string; address: string; symbol: string; decimals: number }[] = [
  { network: 'eip155:4663', address: '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168', symbol: 'USDG', decimals: 6 },
];

/** Atomic units of a token as people read them ("1000000" of USDG → "1.00 USDG"); an unknown token keeps its units. */
export function tokenAmount(atomic: string, network: string, asset: string): string {
  const known = KNOWN_ASSETS.find((a) => a.network === network && a.address.toLowerCase() === asset.toLowerCase());
  if (!known) return `${atomic} atomic units of ${shortHex(asset, 4)} (${network})`;
  return symbolAmount(atomic, known.decimals, known.symbol);
}

/** Atomic units with at least two decimals and the symbol: ("2500000", 6, "USDG") → "2.50 USDG". */
export function symbolAmount(atomic: string, decimals: number, symbol: string): string {
  const [whole, fraction = ''] = units(atomic, decimals).split('.');
  return `${whole}.${fraction.padEnd(2, '0')} ${symbol}`;
}

/** Whole seconds as the largest unit that divides them: 3600 → "1 h", 90 → "90 s". */
export function duration(seconds: number): string {
  for (const [size, unit] of [[86_400, 'd'], [3_600, 'h'], [60, 'min']] as const) if (seconds % size === 0) return `${seconds / size} ${unit}`;
  return `${seconds} s`;
}

/**
 * Networks the pages name in words (the server's list is src/chain/registry.ts, NETWORKS, which the pages do not
 * bundle); an unknown one is said as its CAIP-2 id.
 */
export const KNOWN_NETWORKS: readonly { network: string; name: string }[] = [{ network: 'eip155:4663', name: 'Robinhood Chain' }];

/** "eip155:4663" → "Robinhood Chain". */
export const networkName = (network: string) => KNOWN_NETWORKS.find((n) => n.network === network)?.name ?? network;
