// DKIM keys: RSA 2048 made with node:crypto (off the event loop); the public half published as a
// TXT record whose text is split into strings of at most 255 bytes, as DNS requires.
import { generateKeyPair } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { domainFile } from '../files.ts';

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

/** Whether `<label>.<domain>` is a name DNS can hold (at most 253 characters). */
export function nameFits(label: string, domain: string): boolean {
  return label.length + 1 + domain.length <= 253;
}

/**
 * Whether the domain's key record, `default._domainkey.<domain>`, fits in DNS. A domain too long
 * for it gets no key: mail signed with a key no one can look up would fail DKIM everywhere.
 */
export function dkimRecordFits(domain: string): boolean {
  return nameFits('default._domainkey', domain);
}

/** Whether the account's mail is signed: DKIM on, and a key record DNS can hold. */
export function signsMail(account: { dkim: boolean; domain: string }): boolean {
  return account.dkim && dkimRecordFits(account.domain);
}

/** The domain's private key (a system path): the dns component makes it, OpenDKIM signs with it. */
export function dkimKeyFile(dkimDir: string, domain: string): string {
  return join(dkimDir, domainFile(domain, '.private'));
}

/** Where keys made ahead wait (DkimKeyPool): root's alone, inside the key directory, a dot name. */
export function dkimPoolDir(dkimDir: string): string {
  return join(dkimDir, '.pool');
}
