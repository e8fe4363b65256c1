// The little of DER (X.690) that the fallback certificates need (fallback.ts): each value is its
// tag, its length and its content, lengths in the shortest form, integers without needless
// leading bytes, and the reading back of a SEQUENCE's elements.

/** One DER value: `tag`, then the length of `content`, then `content`. */
export function der(tag: number, ...content: Uint8Array[]): Buffer {
  const body = Buffer.concat(content);
  const length = body.length;
  if (length < 0x80) return Buffer.concat([Buffer.from([tag, length]), body]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.concat([Buffer.from([tag, 0x80 | bytes.length, ...bytes]), body]);
}

export const sequence = (...content: Uint8Array[]) => der(0x30, ...content);
export const set = (...content: Uint8Array[]) => der(0x31, ...content);
export const octetString = (content: Uint8Array) => der(0x04, content);
export const utf8String = (text: string) => der(0x0c, Buffer.from(text, 'utf8'));
export const boolean = (value: boolean) => der(0x01, Buffer.from([value ? 0xff : 0x00]));
/** Context-specific `number`, constructed (EXPLICIT): it wraps whole values. */
export const explicit = (number: number, ...content: Uint8Array[]) => der(0xa0 | number, ...content);
/** Context-specific `number`, primitive (IMPLICIT over a primitive type). */
export const implicit = (number: number, content: Uint8Array) => der(0x80 | number, content);

/** A BIT STRING of whole bytes, or of `bits` bits of `bytes` (the rest of the last byte unused). */
export function bitString(bytes: Uint8Array, bits = bytes.length * 8): Buffer {
  return der(0x03, Buffer.from([bytes.length * 8 - bits]), bytes);
}

/** A non-negative INTEGER given as its big-endian bytes (none: zero) or a small number. */
export function integer(value: Uint8Array | number): Buffer {
  if (typeof value === 'number' && !(Number.isSafeInteger(value) && value >= 0))
    throw new Error(`DER: ${value} is not a non-negative integer`);
  let bytes = typeof value === 'number' ? numberBytes(value) : Buffer.from(value);
  if (bytes.length === 0) bytes = Buffer.from([0]);
  while (bytes.length > 1 && bytes[0] === 0 && bytes[1]! < 0x80) bytes = bytes.subarray(1);
  if (bytes[0]! >= 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return der(0x02, bytes);
}

function numberBytes(value: number): Buffer {
  const bytes: number[] = [];
  for (let rest = value; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from(bytes.length > 0 ? bytes : [0]);
}

/** An OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  if ([first, second, ...rest].some((arc) => !Number.isSafeInteger(arc) || arc! < 0))
    throw new Error(`DER: ${dotted} is not an object identifier this encoder writes`);
  const bytes: number[] = [];
  for (const arc of [first! * 40 + second!, ...rest]) {
    const group = [arc & 0x7f];
    for (let high = Math.floor(arc / 128); high > 0; high = Math.floor(high / 128))
      group.unshift(0x80 | (high & 0x7f));
    bytes.push(...group);
  }
  return der(0x06, Buffer.from(bytes));
}

/** A time as X.509 wants it: UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5). */
export function time(date: Date): Buffer {
  const year = date.getUTCFullYear();
  if (!(year >= 1950 && year <= 9999)) throw new Error(`DER: no X.509 time for ${date.toISOString()}`);
  const iso = date.toISOString();
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return date.getUTCFullYear() < 2050
    ? der(0x17, Buffer.from(digits.slice(2), 'ascii'))
    : der(0x18, Buffer.from(digits, 'ascii'));
}

/** The elements of the SEQUENCE (or SET) `value`, each whole (tag, length and content). */
export function elements(value: Uint8Array): Buffer[] {
  const bytes = Buffer.from(value);
  const { start, end } = extent(bytes, 0);
  const found: Buffer[] = [];
  for (let at = start; at < end; ) {
    const element = extent(bytes, at);
    if (element.end > end) throw new Error('DER: an element runs past its parent');
    found.push(bytes.subarray(at, element.end));
    at = element.end;
  }
  return found;
}

/** The content of the DER value `value` (past its tag and length). */
export function contentOf(value: Uint8Array): Buffer {
  const bytes = Buffer.from(value);
  const { start, end } = extent(bytes, 0);
  return bytes.subarray(start, end);
}

/** Where the content of the value at `at` starts and where the value ends. */
function extent(bytes: Buffer, at: number): { start: number; end: number } {
  const first = bytes[at + 1];
  if (first === undefined) throw new Error('DER: a value is cut short');
  let start = at + 2;
  let length = first;
  if (first >= 0x80) {
    const count = first & 0x7f;
    if (count === 0 || count > 4) throw new Error('DER: a length of an unsupported form');
    if (start + count > bytes.length) throw new Error('DER: a value is cut short');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + bytes[start + i]!;
    start += count;
  }
  const end = start + length;
  if (end > bytes.length) throw new Error('DER: a value is cut short');
  return { start, end };
}
