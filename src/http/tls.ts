// The HTTPS certificate: the configured one, else a self-signed one made on first start into
// <data-dir>/tls/ and reused afterwards.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/index.ts';

export interface TlsFiles {
  key: string;
  cert: string;
}

function writeAtomically(path: string, content: string, mode: number): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content, { mode });
  renameSync(temporary, path);
}

export async function loadCertificate(config: Config): Promise<TlsFiles> {
  if (config.tlsCert && config.tlsKey) {
    return { cert: readFileSync(config.tlsCert, 'utf8'), key: readFileSync(config.tlsKey, 'utf8') };
  }
  const dir = join(config.dataDir, 'tls');
  const certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
  if (existsSync(certPath) && existsSync(keyPath)) {
    return { cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Loaded only on the first start, when there is a certificate to make.
  const { generate } = await import('selfsigned');
  const now = new Date();
  const pems = await generate([{ name: 'commonName', value: config.hostName }], {
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate: now,
    notAfterDate: new Date(now.getTime() + 825 * 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: config.hostName },
          ...(config.hostName === 'localhost' ? [] : [{ type: 2 as const, value: 'localhost' }]),
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  writeAtomically(keyPath, pems.private, 0o600);
  writeAtomically(certPath, pems.cert, 0o644);
  return { cert: pems.cert, key: pems.private };
}
