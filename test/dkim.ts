// A DKIM verifier of the test's own (RFC 6376, rsa-sha256, relaxed canonicalization), so that a
// signature is checked by code that shares nothing with the signer.
import { createHash, createPublicKey, verify } from 'node:crypto';

interface Header {
  name: string;
  /** The header as it came, unfolded lines joined by CRLF, without the final CRLF. */
  raw: string;
}

function split(message: string): { headers: Header[]; body: string } {
  const lines = message.replace(/\r?\n/g, '\r\n').split('\r\n');
  const end = lines.indexOf('');
  const headers: Header[] = [];
  for (const line of lines.slice(0, end)) {
    if (/^[ \t]/.test(line) && headers.length > 0) headers.at(-1)!.raw += `\r\n${line}`;
    else headers.push({ name: line.slice(0, line.indexOf(':')), raw: line });
  }
  return { headers, body: lines.slice(end + 1).join('\r\n') };
}

const relaxedHeader = (raw: string) => {
  const colon = raw.indexOf(':');
  const value = raw
    .slice(colon + 1)
    .replace(/\r\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .trim();
  return `${raw.slice(0, colon).trim().toLowerCase()}:${value}`;
};

function relaxedBody(body: string): string {
  const lines = body.split('\r\n').map((line) => line.replace(/[ \t]+/g, ' ').replace(/ $/, ''));
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines.length === 0 ? '' : `${lines.join('\r\n')}\r\n`;
}

/** The DKIM-Signature's domain, or throws saying why the message does not verify against `p`. */
export function verifyDkim(message: string, publicKeyBase64: string): string {
  const { headers, body } = split(message);
  const signature = headers.find((h) => h.name.toLowerCase() === 'dkim-signature');
  if (!signature) throw new Error('no DKIM-Signature');
  const tags = new Map(
    relaxedHeader(signature.raw)
      .slice('dkim-signature:'.length)
      .split(';')
      .map((tag) => tag.trim())
      .filter(Boolean)
      .map((tag) => [tag.slice(0, tag.indexOf('=')), tag.slice(tag.indexOf('=') + 1).replace(/\s+/g, '')]),
  );
  if (tags.get('a') !== 'rsa-sha256' || tags.get('c') !== 'relaxed/relaxed')
    throw new Error(`unexpected a=${tags.get('a')} c=${tags.get('c')}`);
  const bodyHash = createHash('sha256').update(relaxedBody(body)).digest('base64');
  if (bodyHash !== tags.get('bh')) throw new Error('the body hash differs');
  // Each name in h= takes the last instance not yet taken, from the bottom up.
  const remaining = [...headers];
  let signed = '';
  for (const name of tags.get('h')!.split(':')) {
    const index = remaining.findLastIndex((h) => h.name.toLowerCase() === name.toLowerCase());
    if (index === -1) continue;
    signed += `${relaxedHeader(remaining[index]!.raw)}\r\n`;
    remaining.splice(index, 1);
  }
  signed += relaxedHeader(signature.raw).replace(/(^|;)(\s*)b=[^;]*/, '$1$2b=');
  const key = createPublicKey({ key: Buffer.from(publicKeyBase64, 'base64'), format: 'der', type: 'spki' });
  if (!verify('sha256', Buffer.from(signed), key, Buffer.from(tags.get('b')!, 'base64')))
    throw new Error('the signature does not verify');
  return tags.get('d')!;
}
