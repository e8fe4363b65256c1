// What a mail reader shows of a header: RFC 2047 encoded-words decoded (`=?utf-8?b?…?=`,
// `=?utf-8?q?…?=`, in any charset Node decodes, and UTF-7, which readers still know), and then
// Unicode read as a person reads it: NFKC (a full-width ＠ or ． is @ or .), the ideographic full
// stop as a dot (as IDNA reads a domain), invisible format characters (zero-width spaces, soft
// hyphens) gone. The sender checks look for hosted domains in this as well as in the raw header,
// so that no spelling a reader shows as `ceo@bob.example` slips past them.

/** One encoded-word: charset (with RFC 2231's `*language`), B or Q, the encoded text. */
const ENCODED_WORD = /=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g;
/** Whitespace between two encoded-words, which RFC 2047 says a reader drops. */
const BETWEEN_WORDS = /(\?=)\s+(?==\?[^?\s]+\?[BbQq]\?[^?\s]*\?=)/g;

/** Q: `_` is a space, `=XX` a byte, anything else itself. */
function qBytes(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const hex = c === '=' ? text.slice(i + 1, i + 3) : '';
    if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else bytes.push(c === '_' ? 0x20 : c.charCodeAt(0) & 0xff);
  }
  return Buffer.from(bytes);
}

/** UTF-7 (RFC 2152): `+`, base64 of UTF-16BE, an optional `-`; `+-` is a plus sign. */
function utf7(text: string): string {
  return text.replace(/\+([A-Za-z0-9+/]*)-?/g, (_, encoded: string) => {
    if (encoded === '') return '+';
    const units = Buffer.from(encoded, 'base64');
    let decoded = '';
    for (let i = 0; i + 1 < units.length; i += 2) decoded += String.fromCharCode(units.readUInt16BE(i));
    return decoded;
  });
}

/** Bytes in a charset: as Node's decoder reads it, or byte for byte when it knows no such charset. */
function inCharset(bytes: Buffer, charset: string): string {
  const name = charset.replace(/\*.*$/, '').toLowerCase();
  if (name === 'utf-7' || name === 'unicode-1-1-utf-7') return utf7(bytes.toString('latin1'));
  try {
    return new TextDecoder(name).decode(bytes);
  } catch {
    return bytes.toString('latin1');
  }
}

/** A header value with its encoded-words decoded, as a reader shows it. */
export function decodeWords(value: string): string {
  return value
    .replace(BETWEEN_WORDS, '$1')
    .replace(ENCODED_WORD, (_, charset: string, encoding: string, text: string) =>
      inCharset(encoding.toUpperCase() === 'B' ? Buffer.from(text, 'base64') : qBytes(text), charset),
    );
}

/** Text as a person reads it: compatibility forms folded, ideographic dots read, invisibles gone. */
export function asRead(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[\u3002\uff61]/g, '.')
    .replace(/\p{Cf}/gu, '');
}

/** What a reader shows of a header value: decoded, then read. */
export const readerText = (value: string) => asRead(decodeWords(value));
