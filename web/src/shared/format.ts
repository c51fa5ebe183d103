export const usd = (cents: number) => `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

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
  const abs = Math.abs(seconds);
  const text = abs < 60 ? `${abs} s` : abs < 3600 ? `${Math.round(abs / 60)} min` : abs < 86_400 ? `${Math.round(abs / 3600)} h` : `${Math.round(abs / 86_400)} d`;
  return seconds >= 0 ? `in ${text}` : `${text} ago`;
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
  const [whole, fraction = ''] = units(atomic, known.decimals).split('.');
  return `${whole}.${fraction.padEnd(2, '0')} ${known.symbol}`;
}

/** Whole seconds as the largest unit that divides them: 3600 → "1 h", 90 → "90 s". */
export function duration(seconds: number): string {
  for (const [size, unit] of [[86_400, 'd'], [3_600, 'h'], [60, 'min']] as const) if (seconds % size === 0) return `${seconds / size} ${unit}`;
  return `${seconds} s`;
}
