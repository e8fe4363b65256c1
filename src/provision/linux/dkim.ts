// DKIM keys: RSA 2048 made with node:crypto (off the event loop); the public half published as a
// TXT record whose text is split into strings of at most 255 bytes, as DNS requires.
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';

const generateKeyPairAsync = promisify(generateKeyPair);

export interface DkimKey {
  privatePem: string;
  /** The base64 DER SubjectPublicKeyInfo, as DKIM's `p=` tag takes it. */
  publicBase64: string;
}

export async function generateDkimKey(): Promise<DkimKey> {
  const { privateKey, publicKey } = await generateKeyPairAsync('rsa', { modulusLength: 2048 });
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicBase64: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  };
}

/** The TXT record's character strings, each at most 255 bytes. */
export function dkimTxtStrings(publicBase64: string): string[] {
  const text = `v=DKIM1; k=rsa; p=${publicBase64}`;
  const strings: string[] = [];
  for (let i = 0; i < text.length; i += 255) strings.push(text.slice(i, i + 255));
  return strings;
}
