// Address policy for outbound requests to user-supplied URLs (SSRF guard).
// Only 'public' addresses may be contacted; every other class is refused.
//
// We parse addresses into bytes ourselves instead of relying on net.BlockList:
// its handling of IPv4-mapped IPv6 differs between Node versions, and we need the
// embedded IPv4 of mapped/compatible/NAT64/6to4 forms anyway.
import { isIPv4, isIPv6 } from 'node:net';

export type AddressClass =
  | 'public'
  | 'invalid'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'multicast'
  | 'broadcast'
  | 'metadata'
  | 'unique_local'
  | 'documentation'
  | 'benchmark'
  | 'reserved';

type Rule = [cidr: string, cls: AddressClass];

// Order matters: first match wins, so specific entries precede their enclosing ranges.
const V4_RULES: Rule[] = [
  ['169.254.169.254/32', 'metadata'], // AWS/GCP/Azure/OCI instance metadata
  ['169.254.170.2/32', 'metadata'], // AWS ECS task metadata
  ['100.100.100.200/32', 'metadata'], // Alibaba Cloud metadata (inside CGNAT)
  ['168.63.129.16/32', 'metadata'], // Azure WireServer: public-looking, host-internal
  ['255.255.255.255/32', 'broadcast'],
  ['0.0.0.0/32', 'unspecified'],
  ['0.0.0.0/8', 'reserved'], // "this network"; Linux routes it to localhost
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link_local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'], // deprecated 6to4 relay anycast
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmark'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
];

// IPv6 forms that embed an IPv4 address are classified by that IPv4 (see classifyV6).
const V6_RULES: Rule[] = [
  ['fd00:ec2::254/128', 'metadata'], // AWS metadata over IPv6 (inside fc00::/7)
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['64:ff9b:1::/48', 'reserved'], // local-use NAT64 (RFC 8215): site-specific translation
  ['100::/64', 'reserved'], // discard-only
  ['2001:2::/48', 'benchmark'],
  ['2001:db8::/32', 'documentation'],
  ['2001::/23', 'reserved'], // IETF protocol assignments incl. Teredo (2001::/32), ORCHID
  ['3fff::/20', 'documentation'],
  ['fc00::/7', 'unique_local'],
  ['fe80::/10', 'link_local'],
  ['ff00::/8', 'multicast'],
];

type Cidr = { bytes: number[]; bits: number; cls: AddressClass };

function compile(rules: Rule[]): Cidr[] {
  return rules.map(([cidr, cls]) => {
    const [addr, bits] = cidr.split('/');
    const bytes = (isIPv4(addr!) ? v4Bytes(addr!) : v6Bytes(addr!))!;
    return { bytes, bits: Number(bits), cls };
  });
}

function v4Bytes(ip: string): number[] | null {
  if (!isIPv4(ip)) return null;
  return ip.split('.').map(Number);
}

function v6Bytes(ip: string): number[] | null {
  ip = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, ''); // brackets and zone id are irrelevant
  if (!isIPv6(ip)) return null;
  let tail: number[] = [];
  const dotted = ip.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    tail = v4Bytes(dotted[1]!)!;
    ip = ip.slice(0, -dotted[1]!.length) + '0:0'; // placeholder groups, replaced below
  }
  const [head, rest] = ip.split('::') as [string, string | undefined];
  const groups = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const all = [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  const bytes = all.flatMap((g) => [g >> 8, g & 0xff]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

function matches(bytes: number[], c: Cidr): boolean {
  for (let i = 0, bits = c.bits; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i]! & mask) !== (c.bytes[i]! & mask)) return false;
  }
  return true;
}

const V4 = compile(V4_RULES);
const V6 = compile(V6_RULES);
const MAPPED = compile([['::ffff:0:0/96', 'reserved']])[0]!;
const COMPAT = compile([['::/96', 'reserved']])[0]!; // deprecated IPv4-compatible ::a.b.c.d
const NAT64 = compile([['64:ff9b::/96', 'reserved']])[0]!;
const SIX_TO_FOUR = compile([['2002::/16', 'reserved']])[0]!;
const GLOBAL_UNICAST = compile([['2000::/3', 'public']])[0]!;

function classifyV4(b: number[]): AddressClass {
  return V4.find((c) => matches(b, c))?.cls ?? 'public';
}

function classifyV6(b: number[]): AddressClass {
  const listed = V6.find((c) => matches(b, c));
  if (listed) return listed.cls; // before COMPAT so :: and ::1 keep their own class
  // Mapped and NAT64 forms reach the embedded IPv4; compatible/6to4 are judged the same
  // way so a private IPv4 can never be smuggled inside an IPv6 literal or AAAA record.
  if (matches(b, MAPPED) || matches(b, COMPAT) || matches(b, NAT64)) return classifyV4(b.slice(12));
  if (matches(b, SIX_TO_FOUR)) return classifyV4(b.slice(2, 6));
  // Everything outside 2000::/3 is unallocated or special-purpose.
  return matches(b, GLOBAL_UNICAST) ? 'public' : 'reserved';
}

/** Classifies an IP literal (IPv4 dotted, IPv6 with optional brackets/zone id). */
export function classifyAddress(ip: string): AddressClass {
  const b4 = v4Bytes(ip);
  if (b4) return classifyV4(b4);
  const b6 = v6Bytes(ip);
  return b6 ? classifyV6(b6) : 'invalid';
}

/** True only for addresses that are safe to contact on behalf of a user-supplied URL. */
export function isPublicAddress(ip: string): boolean {
  return classifyAddress(ip) === 'public';
}
