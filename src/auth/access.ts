// Restricted remote access: is a client address inside an API account's allowed list?
import { BlockList, isIPv4 } from 'node:net';

/** An IPv4-mapped IPv6 peer (::ffff:192.0.2.1) counts as its IPv4 address. */
export function canonicalAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address.toLowerCase();
}

export function addressAllowed(address: string, allowed: readonly string[]): boolean {
  const peer = canonicalAddress(address);
  const peerType = isIPv4(peer) ? 'ipv4' : 'ipv6';
  const list = new BlockList();
  for (const range of allowed) {
    const [net, bits] = range.split('/');
    const type = isIPv4(net!) ? 'ipv4' : 'ipv6';
    if (type !== peerType) continue;
    if (bits === undefined) list.addAddress(net!, type);
    else list.addSubnet(net!, Number(bits), type);
  }
  try {
    return list.check(peer, peerType);
  } catch {
    return false;
  }
}
