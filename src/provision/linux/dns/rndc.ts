// BIND's control channel spoken by Berth itself, as the rndc program speaks it: a change's addzone,
// delzone or reload costs a TCP exchange on this machine instead of a process (rndc's own start
// took 10–25 ms of every change that touches a zone).
//
// A message is a table of named values (`_auth`, `_ctrl`, `_data`), each value typed: binary data
// (1), a table (2) or a list (3), with a one-byte type and a four-byte length; a name is one byte of
// length and the name. On the wire: the message's length, version 1, then its table's entries. The
// `_auth` entry comes first and holds the HMAC of every entry after it, with the key BIND's
// `controls` name (rndc.key). The client first sends `null` and takes the nonce BIND answers with,
// then sends the command with that nonce; BIND signs its answers too, and Berth checks them.
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { connect } from 'node:net';
import { readIfExists } from '../files.ts';

type Value = Buffer | Table | Value[];
interface Table {
  [name: string]: Value;
}

const BINARY = 1;
const TABLE = 2;
const LIST = 3;

/** HMAC algorithms by their name in rndc.key, and their number in a signature (MD5's has none). */
const ALGORITHMS: Record<string, { hash: string; number: number | null }> = {
  'hmac-md5': { hash: 'md5', number: null },
  'hmac-sha1': { hash: 'sha1', number: 161 },
  'hmac-sha224': { hash: 'sha224', number: 162 },
  'hmac-sha256': { hash: 'sha256', number: 163 },
  'hmac-sha384': { hash: 'sha384', number: 164 },
  'hmac-sha512': { hash: 'sha512', number: 165 },
};

export interface RndcKey {
  algorithm: string;
  secret: Buffer;
}

/** The first key of an rndc.key (or named.conf) text: `key "name" { algorithm …; secret "…"; };`. */
export function parseRndcKey(text: string): RndcKey | null {
  const key = /key\s+"?[^"\s{]+"?\s*\{([^}]*)\}/.exec(text)?.[1];
  const algorithm = key && /algorithm\s+"?([a-z0-9-]+)"?\s*;/i.exec(key)?.[1]?.toLowerCase();
  const secret = key && /secret\s+"([A-Za-z0-9+/=]+)"\s*;/.exec(key)?.[1];
  if (!algorithm || !secret || !(algorithm in ALGORITHMS)) return null;
  return { algorithm, secret: Buffer.from(secret, 'base64') };
}

const length = (n: number) => {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(n);
  return bytes;
};

function encodeValue(value: Value): Buffer {
  if (Buffer.isBuffer(value)) return Buffer.concat([Buffer.from([BINARY]), length(value.length), value]);
  const body = Array.isArray(value) ? Buffer.concat(value.map(encodeValue)) : encodeEntries(value);
  return Buffer.concat([Buffer.from([Array.isArray(value) ? LIST : TABLE]), length(body.length), body]);
}

/** A table's entries, in their order: what is signed, and what follows a message's header. */
export function encodeEntries(table: Table): Buffer {
  return Buffer.concat(
    Object.entries(table).flatMap(([name, value]) => {
      const key = Buffer.from(name, 'latin1');
      if (key.length > 255) throw new Error(`an rndc name is at most 255 bytes: ${name}`);
      return [Buffer.from([key.length]), key, encodeValue(value)];
    }),
  );
}

/** Reads one value at `at`; its end too. */
function decodeValue(bytes: Buffer, at: number): { value: Value; end: number } {
  if (at + 5 > bytes.length) throw new Error('an rndc message ended inside a value');
  const type = bytes[at]!;
  const size = bytes.readUInt32BE(at + 1);
  const start = at + 5;
  const end = start + size;
  if (end > bytes.length) throw new Error('an rndc message ended inside a value');
  if (type === BINARY) return { value: bytes.subarray(start, end), end };
  if (type === TABLE) return { value: decodeEntries(bytes.subarray(start, end)).table, end };
  if (type === LIST) {
    const items: Value[] = [];
    for (let next = start; next < end; ) {
      const item = decodeValue(bytes, next);
      items.push(item.value);
      next = item.end;
    }
    return { value: items, end };
  }
  throw new Error(`an rndc value of unknown type ${type}`);
}

/** A table's entries; `firstEnd` is where the first entry ends (what its `_auth` signs follows). */
export function decodeEntries(bytes: Buffer): { table: Table; firstEnd: number } {
  // No prototype: a name the other end sends (`__proto__`) is a name like any other.
  const table: Table = Object.create(null);
  let at = 0;
  let firstEnd = 0;
  while (at < bytes.length) {
    const size = bytes[at]!;
    const name = bytes.subarray(at + 1, at + 1 + size).toString('latin1');
    const { value, end } = decodeValue(bytes, at + 1 + size);
    table[name] = value;
    if (firstEnd === 0) firstEnd = end;
    at = end;
  }
  return { table, firstEnd };
}

/** The `_auth` value of the entries `signed`, as BIND writes and expects it. */
function signature(key: RndcKey, signed: Buffer): Table {
  const { hash, number } = ALGORITHMS[key.algorithm]!;
  const digest = createHmac(hash, key.secret).update(signed).digest('base64');
  if (number === null) return { hmd5: Buffer.from(digest.replace(/=+$/, ''), 'latin1') };
  const padded = Buffer.alloc(89);
  padded[0] = number;
  padded.write(digest, 1, 'latin1');
  return { hsha: padded };
}

/** A whole message: its length, version 1, its signature, its entries. */
export function encodeMessage(key: RndcKey, table: Table): Buffer {
  const entries = encodeEntries(table);
  const auth = encodeEntries({ _auth: signature(key, entries) });
  return Buffer.concat([length(4 + auth.length + entries.length), length(1), auth, entries]);
}

/** The entries of a message after its length, checked against `key`: its table. */
export function decodeMessage(key: RndcKey, body: Buffer): Table {
  if (body.length < 4 || body.readUInt32BE(0) !== 1) throw new Error('not an rndc message of version 1');
  const entries = body.subarray(4);
  const { table, firstEnd } = decodeEntries(entries);
  const auth = table._auth;
  if (!auth || Buffer.isBuffer(auth) || Array.isArray(auth)) throw new Error('an rndc answer was not signed');
  const expected = signature(key, entries.subarray(firstEnd));
  const [name] = Object.keys(expected);
  const given = auth[name!];
  const wanted = expected[name!] as Buffer;
  if (!Buffer.isBuffer(given) || given.length !== wanted.length || !timingSafeEqual(given, wanted))
    throw new Error("an rndc answer's signature does not match the key");
  return table;
}

const text = (table: Table | undefined, name: string): string | undefined => {
  const value = table?.[name];
  return Buffer.isBuffer(value) ? value.toString('utf8') : undefined;
};
const sub = (table: Table, name: string): Table | undefined => {
  const value = table[name];
  return value && !Buffer.isBuffer(value) && !Array.isArray(value) ? value : undefined;
};

/** Reads whole messages from a connection, each as the entries after its length. */
function messages(socket: ReturnType<typeof connect>): () => Promise<Buffer> {
  let buffered = Buffer.alloc(0);
  const waiting: { resolve(body: Buffer): void; reject(error: Error): void }[] = [];
  let failure: Error | null = null;
  const drain = () => {
    while (waiting.length > 0 && buffered.length >= 4) {
      const size = buffered.readUInt32BE(0);
      if (size > 16 * 1024 * 1024) return fail(new Error('an rndc answer too large'));
      if (buffered.length < 4 + size) return;
      const body = buffered.subarray(4, 4 + size);
      buffered = buffered.subarray(4 + size);
      waiting.shift()!.resolve(body);
    }
  };
  const fail = (error: Error) => {
    failure = error;
    for (const { reject } of waiting.splice(0)) reject(error);
  };
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    drain();
  });
  socket.on('error', fail);
  socket.on('close', () =>
    fail(failure ?? new Error('BIND closed its control channel (does it take the key Berth signs with?)')),
  );
  return () =>
    new Promise<Buffer>((resolve, reject) => {
      if (failure) return reject(failure);
      waiting.push({ resolve, reject });
      drain();
    });
}

export interface RndcControl {
  /** Runs an rndc command (`addzone a.example { … };`): BIND's text answer, or an Error as rndc words it. */
  command(line: string): Promise<string>;
}

/**
 * BIND's control channel at `address` (`host:port`), signed with the key in `keyFile` (read at each
 * command: a key rotated with BIND's is taken at once).
 */
export function rndcControl(address: string, keyFile: string, timeoutMs = 10_000): RndcControl {
  // `address:port`, `[IPv6]:port`, or an address alone (port 953), as the configuration takes it.
  const match = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]+):(\d+)$/.exec(address);
  const [host, port] = match ? [match[1]!, Number(match[2])] : [address, 953];
  return {
    async command(line) {
      const key = parseRndcKey(readIfExists(keyFile) ?? '');
      if (!key) throw new Error(`no rndc key Berth can use in ${keyFile}`);
      const socket = connect({ host, port });
      socket.setTimeout(timeoutMs, () =>
        socket.destroy(new Error(`BIND's control channel at ${address} did not answer`)),
      );
      const next = messages(socket);
      try {
        let serial = randomInt(1, 2 ** 31);
        const exchange = async (type: string, nonce?: Buffer) => {
          const now = Math.floor(Date.now() / 1000);
          const ctrl: Table = {
            _ser: Buffer.from(String(serial)),
            _tim: Buffer.from(String(now)),
            _exp: Buffer.from(String(now + 60)),
            ...(nonce ? { _nonce: nonce } : {}),
          };
          socket.write(encodeMessage(key, { _ctrl: ctrl, _data: { type: Buffer.from(type, 'utf8') } }));
          const answer = decodeMessage(key, await next());
          const control = sub(answer, '_ctrl');
          if (text(control, '_ser') !== String(serial) || text(control, '_rpl') !== '1')
            throw new Error('BIND answered another rndc message');
          serial++;
          return { control: control!, data: sub(answer, '_data') };
        };
        const greeting = await exchange('null');
        const nonce = greeting.control._nonce;
        if (!Buffer.isBuffer(nonce)) throw new Error('BIND gave no nonce on its control channel');
        const { data } = await exchange(line, nonce);
        const result = text(data, 'result') ?? '0';
        const said = text(data, 'text') ?? '';
        if (result !== '0') {
          const verb = line.split(' ', 1)[0];
          throw new Error(
            `rndc: '${verb}' failed: ${text(data, 'err') ?? `result ${result}`}${said ? `\n${said}` : ''}`,
          );
        }
        return said;
      } finally {
        socket.destroy();
      }
    },
  };
}
