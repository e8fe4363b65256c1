// Client addresses: one canonical spelling per address (so that lock-out counters, per-address
// limits and allow lists cannot be dodged by writing an address another way), and whether an
// address is inside an API account's allowed list.
import { BlockList, isIPv4, isIPv6 } from 'node:net';

/** The eight 16-bit groups of an IPv6 address, or null when the text is not one. */
function ipv6Groups(text: string): number[] | null {
  if (!isIPv6(text)) return null;
  let body = text;
  const tail: number[] = [];
  const embedded = /:(\d+\.\d+\.\d+\.\d+)$/.exec(body);
  if (embedded) {
    const [a, b, c, d] = embedded[1]!.split('.').map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    body = `${body.slice(0, embedded.index)}:0`; // a placeholder group, dropped below
  }
  const [head, rest] = body.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  if (embedded) (rest === undefined ? left : right).pop();
  const missing = 8 - tail.length - left.length - right.length;
  const groups = [
    ...left,
    ...(rest === undefined ? [] : new Array<number>(missing).fill(0)),
    ...right,
    ...tail,
  ];
  return groups.length === 8 ? groups : null;
}

/** RFC 5952 text: lower case, no leading zeros, the longest run of two or more zero groups as `::`. */
function formatIpv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/**
 * Addresses already brought to their canonical text. Every API call asks for its client's, and
 * the same few addresses call again and again; a flood of different ones only empties it.
 */
const normalized = new Map<string, string | null>();
const NORMALIZED_KEPT = 10_000;

/**
 * The canonical text of an IP address, or null when `text` is none: IPv4 as dotted quad, an
 * IPv4-mapped IPv6 address as its IPv4 address, IPv6 in RFC 5952 form. Accepts what proxies
 * write in X-Forwarded-For besides a bare address: `[v6]`, `[v6]:port`, `v4:port`, a zone.
 */
export function normalizeAddress(text: string): string | null {
  let known = normalized.get(text);
  if (known !== undefined) return known;
  known = normalize(text);
  if (normalized.size >= NORMALIZED_KEPT) normalized.clear();
  normalized.set(text, known);
  return known;
}

function normalize(text: string): string | null {
  let value = text.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(value);
  if (bracketed) value = bracketed[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d{1,5}$/.test(value)) value = value.slice(0, value.lastIndexOf(':'));
  value = value.replace(/%[A-Za-z0-9_.-]+$/, '');
  if (isIPv4(value)) return value;
  const groups = ipv6Groups(value);
  if (!groups) return null;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return formatIpv6(groups);
}

/** The canonical form of a peer address as Node reports it (always an address). */
export function canonicalAddress(address: string): string {
  return normalizeAddress(address) ?? address.toLowerCase();
}

/**
 * Who sent a request: the address Fastify derived (the TCP peer, or X-Forwarded-For's entry
 * behind a trusted proxy) when it is an address, else the TCP peer. A forwarded value that is no
 * address is never a lock-out key. Without X-Forwarded-For that is the TCP peer whoever it is,
 * found without Fastify's walk through the proxy list.
 */
export function clientAddress(request: {
  ip: string;
  headers: Record<string, unknown>;
  socket: { remoteAddress?: string };
}): string {
  const peer = canonicalAddress(request.socket.remoteAddress ?? '');
  if (request.headers['x-forwarded-for'] === undefined) return peer;
  return normalizeAddress(request.ip) ?? peer;
}

/** Addresses and CIDR ranges (an allow list, the trusted proxies) as one list to check against. */
export function addressList(ranges: readonly string[]): BlockList {
  const list = new BlockList();
  for (const range of ranges) {
    const [net, bits] = range.split('/');
    const entry = normalizeAddress(net!);
    if (entry === null) continue;
    const type = isIPv4(entry) ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(entry, type);
    else list.addSubnet(entry, Number(bits), type);
  }
  return list;
}

/** Whether an address is on the list (an IPv4-mapped IPv6 address counts as its IPv4 address). */
export function onList(list: BlockList, address: string): boolean {
  const peer = canonicalAddress(address);
  try {
    return list.check(peer, isIPv4(peer) ? 'ipv4' : 'ipv6');
  } catch {
    return false;
  }
}

export function addressAllowed(address: string, allowed: readonly string[]): boolean {
  return onList(addressList(allowed), address);
}
