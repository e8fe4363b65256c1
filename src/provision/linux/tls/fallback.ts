// The server's own fallback certificates: a CA made once per server (`<cert_dir>/fallback-ca.pem`,
// its key 0600 beside it) signs a certificate for each new domain, so that HTTPS answers the
// moment createacct does, before the ACME certificate arrives. Browsers do not trust it; a client
// given the fallback CA does. EC P-256 keys: made in milliseconds, unlike RSA.
import { createPrivateKey, KeyObject, randomBytes, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const DAY = 24 * 3600 * 1000;

function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0]! &= 0x7f;
  return bytes.toString('hex');
}

type KeyPair = webcrypto.CryptoKeyPair;

const pemOf = (key: webcrypto.CryptoKey) =>
  KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }).toString();

export interface FallbackCa {
  certPem: string;
  keyPem: string;
}

export async function makeFallbackCa(hostName: string, now = new Date()): Promise<FallbackCa> {
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as KeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `CN=Berth fallback CA ${hostName}`,
    notBefore: new Date(now.getTime() - DAY),
    notAfter: new Date(now.getTime() + 3650 * DAY),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: pemOf(keys.privateKey) };
}

/** A certificate for `names` (domains or addresses; the first is the subject), signed by the fallback CA: chain then key. */
export async function issueFallback(
  ca: FallbackCa,
  names: readonly string[],
  now = new Date(),
): Promise<string> {
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await createPrivateKey(ca.keyPem).toCryptoKey(ALGORITHM, false, ['sign']);
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as KeyPair;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${names[0]}`,
    issuer: caCert.subject,
    notBefore: new Date(now.getTime() - DAY),
    notAfter: new Date(now.getTime() + 397 * DAY),
    signingKey: caKey,
    publicKey: keys.publicKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(
        names.map((value) => ({ type: isIP(value) ? ('ip' as const) : ('dns' as const), value })),
      ),
    ],
  });
  return `${cert.toString('pem')}\n${ca.certPem}\n${pemOf(keys.privateKey)}`;
}
