// The server's own fallback certificates: a CA made once per server (`<cert_dir>/fallback-ca.pem`,
// its key 0600 beside it) signs a certificate for each new domain, so that HTTPS answers the
// moment createacct does, before the ACME certificate arrives. Browsers do not trust it; a client
// given the fallback CA does. EC P-256 keys: made in milliseconds, unlike RSA.
//
// Each certificate is written as DER here (der.ts) and signed with node:crypto: a library building
// it through WebCrypto took about 3.5 ms of Berth's thread a createacct, the CA parsed again each
// time included; this takes a few tenths of a millisecond, the key made off the thread.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  type KeyObject,
  randomBytes,
  sign,
} from 'node:crypto';
import { isIP } from 'node:net';
import { promisify } from 'node:util';
import {
  bitString,
  boolean,
  contentOf,
  elements,
  explicit,
  implicit,
  integer,
  octetString,
  oid,
  sequence,
  set,
  time,
  utf8String,
} from './der.ts';

const DAY = 24 * 3600 * 1000;
const ECDSA_WITH_SHA256 = sequence(oid('1.2.840.10045.4.3.2'));
const makeKeys = promisify(generateKeyPair);

export interface FallbackCa {
  certPem: string;
  keyPem: string;
}

/** RFC 5280's upper bound on a common name. */
const COMMON_NAME_LIMIT = 64;

/** A name of one common name (`CN=<cn>`); an empty name for one past the bound. */
const commonName = (cn: string) =>
  cn.length > COMMON_NAME_LIMIT ? sequence() : sequence(set(sequence(oid('2.5.4.3'), utf8String(cn))));

/** An extension: its OID, critical or not, and its value's DER. */
const extension = (id: string, critical: boolean, value: Buffer) =>
  sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));

/** A positive serial of 127 random bits (RFC 5280: at most 20 bytes, never negative). */
function serial(): Buffer {
  const bytes = randomBytes(16);
  bytes[0]! &= 0x7f;
  return integer(bytes);
}

const pem = (label: string, bytes: Buffer) =>
  `-----BEGIN ${label}-----\n${bytes
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END ${label}-----`;

/** The DER of a PEM block's content. */
const derOf = (text: string) =>
  Buffer.from(text.replace(/-----(BEGIN|END) [^-]+-----/g, '').replace(/\s+/g, ''), 'base64');

/** A key's identifier (RFC 5280 4.2.1.2, method 1): SHA-1 of its public key's bits. */
function keyIdentifier(publicKey: KeyObject): Buffer {
  const [, bits] = elements(publicKey.export({ type: 'spki', format: 'der' }));
  // The BIT STRING's bits, past its count of unused bits (none).
  return createHash('sha1').update(contentOf(bits!).subarray(1)).digest();
}

/**
 * An X.509 v3 certificate, signed by `signer` (ECDSA with SHA-256), as PEM, with the identifiers
 * of its key and of its issuer's (`issuerKey`), which strict verifiers ask for.
 */
function certificate(
  issuer: Buffer,
  issuerKey: Buffer,
  subject: Buffer,
  publicKey: KeyObject,
  days: { from: Date; to: Date },
  extensions: Buffer[],
  signer: KeyObject,
): string {
  const identifiers = [
    extension('2.5.29.14', false, octetString(keyIdentifier(publicKey))),
    extension('2.5.29.35', false, sequence(implicit(0, issuerKey))),
  ];
  const tbs = sequence(
    explicit(0, integer(2)),
    serial(),
    ECDSA_WITH_SHA256,
    issuer,
    sequence(time(days.from), time(days.to)),
    subject,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...extensions, ...identifiers)),
  );
  // node:crypto signs an EC key's digest as the DER ECDSA-Sig-Value X.509 carries.
  return pem('CERTIFICATE', sequence(tbs, ECDSA_WITH_SHA256, bitString(sign('sha256', tbs, signer))));
}

const newKeys = () => makeKeys('ec', { namedCurve: 'P-256' });
const keyPemOf = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();

export async function makeFallbackCa(hostName: string, now = new Date()): Promise<FallbackCa> {
  const { publicKey, privateKey } = await newKeys();
  // A CA's name is never empty: a long host name is cut to the bound.
  const name = commonName(`Berth fallback CA ${hostName}`.slice(0, COMMON_NAME_LIMIT));
  const certPem = certificate(
    name,
    keyIdentifier(publicKey),
    name,
    publicKey,
    { from: new Date(now.getTime() - DAY), to: new Date(now.getTime() + 3650 * DAY) },
    [
      // A CA, which signs certificates of servers alone (no CA below it).
      extension('2.5.29.19', true, sequence(boolean(true), integer(0))),
      // keyCertSign and cRLSign: bits 5 and 6.
      extension('2.5.29.15', true, bitString(Buffer.from([0x06]), 7)),
    ],
    privateKey,
  );
  return { certPem, keyPem: keyPemOf(privateKey) };
}

/** The CA last used, parsed: its subject (each certificate's issuer), its key and the key's identifier. */
let parsed: { ca: FallbackCa; subject: Buffer; key: KeyObject; keyId: Buffer } | null = null;

function parse(ca: FallbackCa): { subject: Buffer; key: KeyObject; keyId: Buffer } {
  if (parsed?.ca.certPem === ca.certPem && parsed.ca.keyPem === ca.keyPem) return parsed;
  const [tbs] = elements(derOf(ca.certPem));
  const fields = elements(tbs!);
  // version [0], serial, signature, issuer, validity, subject.
  const subject = fields[fields[0]![0] === 0xa0 ? 5 : 4];
  if (!subject) throw new Error('the fallback CA certificate has no subject');
  const key = createPrivateKey(ca.keyPem);
  if (key.asymmetricKeyType !== 'ec') throw new Error('the fallback CA key is not an EC key');
  parsed = { ca, subject, key, keyId: keyIdentifier(createPublicKey(key)) };
  return parsed;
}

/** An address's bytes, as a SAN's iPAddress carries them (4 or 16). */
export function addressBytes(address: string): Buffer {
  if (isIP(address) === 4) return Buffer.from(address.split('.').map(Number));
  let text = address;
  // An IPv6 address ending in dotted IPv4 (::ffff:192.0.2.1): its last two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((a! << 8) | b!).toString(16)}:${((c! << 8) | d!).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const groups = (part: string | null | undefined) => (part ? part.split(':') : []);
  const front = groups(head);
  const back = groups(tail);
  const all = tail === null ? front : [...front, ...Array(8 - front.length - back.length).fill('0'), ...back];
  const bytes = Buffer.alloc(16);
  for (const [i, group] of all.entries()) bytes.writeUInt16BE(Number.parseInt(group, 16), i * 2);
  return bytes;
}

/** A certificate for `names` (domains or addresses; the first is the subject), signed by the fallback CA: chain then key. */
export async function issueFallback(
  ca: FallbackCa,
  names: readonly string[],
  now = new Date(),
): Promise<string> {
  const { subject: issuer, key: caKey, keyId } = parse(ca);
  const { publicKey, privateKey } = await newKeys();
  const subject = commonName(names[0]!);
  const cert = certificate(
    issuer,
    keyId,
    subject,
    publicKey,
    { from: new Date(now.getTime() - DAY), to: new Date(now.getTime() + 397 * DAY) },
    [
      extension('2.5.29.19', true, sequence()),
      // digitalSignature: bit 0.
      extension('2.5.29.15', true, bitString(Buffer.from([0x80]), 1)),
      // serverAuth.
      extension('2.5.29.37', false, sequence(oid('1.3.6.1.5.5.7.3.1'))),
      // With no subject (a name past the bound), the names are the certificate's: critical.
      extension(
        '2.5.29.17',
        subject.length === 2,
        sequence(
          ...names.map((name) =>
            isIP(name) ? implicit(7, addressBytes(name)) : implicit(2, Buffer.from(name, 'ascii')),
          ),
        ),
      ),
    ],
    caKey,
  );
  return `${cert}\n${ca.certPem.trimEnd()}\n${keyPemOf(privateKey)}`;
}
