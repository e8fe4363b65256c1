// A DNS server for tests, on 127.0.0.1 over UDP: it answers MX, A, AAAA and SOA questions from a
// table of names (read at each question: a test may change it), NXDOMAIN for a name it does not have and an empty answer for a type the name lacks.
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

export interface Records {
  mx?: string[];
  a?: string[];
  aaaa?: string[];
  /** The serial of the zone's SOA record, when the name is a zone's. */
  soa?: number;
}

const TYPES = { A: 1, SOA: 6, MX: 15, AAAA: 28 } as const;

function encodeName(name: string): Buffer {
  const parts = name.split('.').filter((label) => label !== '');
  return Buffer.concat([
    ...parts.map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label, 'ascii')])),
    Buffer.from([0]),
  ]);
}

function readName(message: Buffer, at: number): { name: string; next: number } {
  const labels: string[] = [];
  let offset = at;
  while (message[offset]! !== 0) {
    const length = message[offset]!;
    labels.push(message.subarray(offset + 1, offset + 1 + length).toString('ascii'));
    offset += length + 1;
  }
  return { name: labels.join('.').toLowerCase(), next: offset + 1 };
}

function record(name: string, type: number, data: Buffer): Buffer {
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(type, 0);
  fixed.writeUInt16BE(1, 2); // IN
  fixed.writeUInt32BE(60, 4);
  fixed.writeUInt16BE(data.length, 8);
  return Buffer.concat([encodeName(name), fixed, data]);
}

function answer(query: Buffer, zone: ReadonlyMap<string, Records>): Buffer {
  const { name, next } = readName(query, 12);
  const type = query.readUInt16BE(next);
  const question = query.subarray(12, next + 4);
  const records = zone.get(name);
  const answers: Buffer[] = [];
  if (records && type === TYPES.MX)
    (records.mx ?? []).forEach((host, i) => {
      const preference = Buffer.alloc(2);
      preference.writeUInt16BE(10 + i, 0);
      answers.push(record(name, type, Buffer.concat([preference, encodeName(host)])));
    });
  if (records && type === TYPES.A)
    for (const address of records.a ?? [])
      answers.push(record(name, type, Buffer.from(address.split('.').map(Number))));
  if (records && type === TYPES.AAAA)
    for (const address of records.aaaa ?? []) {
      const [head = '', tail = ''] = address.split('::');
      const left = head ? head.split(':') : [];
      const right = tail ? tail.split(':') : [];
      const groups = address.includes('::')
        ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
        : left;
      const data = Buffer.alloc(16);
      for (const [i, g] of groups.entries()) data.writeUInt16BE(Number.parseInt(g, 16), i * 2);
      answers.push(record(name, type, data));
    }
  if (records?.soa !== undefined && type === TYPES.SOA) {
    const times = Buffer.alloc(20);
    times.writeUInt32BE(records.soa, 0);
    for (const [i, seconds] of [3600, 600, 86400, 60].entries()) times.writeUInt32BE(seconds, 4 + i * 4);
    answers.push(
      record(name, type, Buffer.concat([encodeName(`ns1.${name}`), encodeName(`hostmaster.${name}`), times])),
    );
  }
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  header.writeUInt16BE(0x8400 | (records ? 0 : 3), 2); // a response, authoritative; NXDOMAIN
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  return Buffer.concat([header, question, ...answers]);
}

/** Starts the server; `address` is `127.0.0.1:<port>`, for [linux] mail_dns_server. */
export async function dnsServer(
  zone: ReadonlyMap<string, Records>,
): Promise<{ address: string; close(): void }> {
  const socket: Socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    try {
      socket.send(answer(query, zone), peer.port, peer.address);
    } catch {
      // a question this server cannot read: no answer
    }
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { address: `127.0.0.1:${(socket.address() as AddressInfo).port}`, close: () => socket.close() };
}
