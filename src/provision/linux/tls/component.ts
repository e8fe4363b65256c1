// The tls component: the certificate of every domain of every account, as one file nginx reads for both the chain and
// the key (`<cert_dir>/<domain>/certificate.pem`, 0640 with the web server's group: nginx's workers
// read it on each TLS handshake), swapped whole by rename so that nginx never sees a key beside
// another certificate, and a renewed one is served from the next handshake on, with no reload. createacct writes a fallback certificate at once (HTTPS
// answers when the call does); the certificate keeper (keeper.ts) then obtains one through ACME
// after the call has answered, and renews it. Each domain's state is in `state.json` beside it.
import { X509Certificate } from 'node:crypto';
import { existsSync, lstatSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import type { CertificateState } from '../../driver.ts';
import { type Component, type LinuxContext, type Site, sitesOf, strayFiles } from '../context.ts';
import { nameFits } from '../dns/dkim.ts';
import {
  domainFile,
  giveFile,
  readIfExists,
  removeDirectory,
  removeFile,
  restoreFile,
  writeFileAtomic,
} from '../files.ts';
import { type FallbackCa, issueFallback, makeFallbackCa } from './fallback.ts';

export interface TlsComponent extends Component {
  /** The file nginx reads for the domain's certificate and key (a system path). */
  certificateFile(domain: string): string;
  readState(domain: string): CertificateState | null;
  /** Puts an ACME certificate in place, unless the domain's directory has gone (removed meanwhile). */
  install(domain: string, pem: string, state: CertificateState): boolean;
  writeState(domain: string, state: CertificateState): void;
  /** The names a certificate for the domain covers: the domain and, when DNS can hold it, www. */
  names(domain: string): string[];
  /** The server's own certificate and key, for its host name (mail's TLS), made at start. */
  hostCertificateFile: string;
  /**
   * Told of every domain that gets a certificate here (the account seen through that domain), for
   * the keeper to obtain or renew it.
   */
  onCertificate?: (account: Account) => void;
}

export function describeCertificate(pem: string): { issuer: string; notAfter: string } {
  const cert = new X509Certificate(pem);
  const issuer = /CN=([^\n]*)/.exec(cert.issuer)?.[1] ?? cert.issuer;
  return { issuer, notAfter: new Date(cert.validTo).toISOString() };
}

export function tlsComponent(ctx: LinuxContext): TlsComponent {
  const { linux } = ctx;
  const dirOf = (domain: string) => join(linux.certDir, domainFile(domain, ''));
  const certificateFile = (domain: string) => join(dirOf(domain), 'certificate.pem');
  const stateFile = (domain: string) => ctx.path(join(dirOf(domain), 'state.json'));
  const names = (domain: string) => (nameFits('www', domain) ? [domain, `www.${domain}`] : [domain]);

  let ca: FallbackCa | null = null;
  async function ensureCa(): Promise<FallbackCa> {
    if (ca) return ca;
    const certPem = readIfExists(ctx.path(join(linux.certDir, 'fallback-ca.pem')));
    const keyPem = readIfExists(ctx.path(join(linux.certDir, 'fallback-ca.key')));
    if (certPem && keyPem) {
      ca = { certPem, keyPem };
      return ca;
    }
    const made = await makeFallbackCa(ctx.config.hostName);
    writeFileAtomic(ctx.path(join(linux.certDir, 'fallback-ca.key')), made.keyPem, 0o600);
    writeFileAtomic(ctx.path(join(linux.certDir, 'fallback-ca.pem')), made.certPem, 0o644);
    ca = made;
    return made;
  }

  /** Writes the domain's certificate and key, for nginx's workers (the web server's group) to read. */
  function writeCertificate(domain: string, pem: string | null): void {
    const file = ctx.path(certificateFile(domain));
    if (pem === null) removeFile(file);
    else writeFileAtomic(file, pem, 0o640, ctx.systemUser(linux.webUser).gid);
  }

  function writeState(domain: string, state: CertificateState): void {
    writeFileAtomic(stateFile(domain), `${JSON.stringify(state, null, 2)}\n`, 0o644);
  }

  async function writeFallback(account: Account): Promise<void> {
    const pem = await issueFallback(await ensureCa(), names(account.domain));
    writeCertificate(account.domain, pem);
    const now = new Date().toISOString();
    writeState(account.domain, {
      state: 'fallback',
      ...describeCertificate(pem),
      attempts: 0,
      nextAttempt: now,
      lastError: null,
    });
  }

  /** Removes the domain's directory as a step whose undo puts its files back. */
  function removeStep(account: Account, name = 'certificate') {
    const files = [ctx.path(certificateFile(account.domain)), stateFile(account.domain)];
    let before: (string | null)[] = [];
    return ctx.step(
      name,
      async () => {
        before = files.map((file) => readIfExists(file));
        for (const file of files) removeFile(file);
        removeDirectory(ctx.path(dirOf(account.domain)));
      },
      async () => {
        writeCertificate(account.domain, before[0] ?? null);
        restoreFile(files[1]!, before[1] ?? null, 0o644);
      },
    );
  }

  /** A domain beside the main one: this server's certificate at once, the keeper's after. */
  function fallbackStep({ site, named }: Site) {
    return ctx.step(
      named('fallback certificate'),
      async () => {
        await writeFallback(site);
        component.onCertificate?.(site);
      },
      async () => {
        removeFile(ctx.path(certificateFile(site.domain)));
        removeFile(stateFile(site.domain));
        removeDirectory(ctx.path(dirOf(site.domain)));
      },
    );
  }

  const component: TlsComponent = {
    name: 'tls',
    certificateFile,
    names,
    hostCertificateFile: join(linux.certDir, 'host', 'certificate.pem'),
    async prepare() {
      const ca = await ensureCa();
      const host = ctx.path(component.hostCertificateFile);
      if (!existsSync(host)) writeFileAtomic(host, await issueFallback(ca, [ctx.config.hostName]), 0o600);
    },
    writeState,
    readState(domain) {
      const text = readIfExists(stateFile(domain));
      return text === null ? null : (JSON.parse(text) as CertificateState);
    },
    install(domain, pem, state) {
      if (!existsSync(ctx.path(dirOf(domain)))) return false;
      writeCertificate(domain, pem);
      writeState(domain, state);
      return true;
    },
    create(account, origin, objects) {
      // A moved account keeps a certificate from ACME; one still waiting for it gets this server's.
      const moved = 'moved' in origin ? origin.moved.certificate : null;
      const kept = moved?.state.state === 'valid' ? moved : null;
      const [, ...others] = sitesOf(account, objects);
      return [
        ctx.step(
          kept ? 'certificate' : 'fallback certificate',
          async () => {
            if (kept) {
              writeCertificate(account.domain, kept.pem);
              writeState(account.domain, kept.state);
            } else await writeFallback(account);
            component.onCertificate?.(account);
          },
          async () => {
            removeFile(ctx.path(certificateFile(account.domain)));
            removeFile(stateFile(account.domain));
            removeDirectory(ctx.path(dirOf(account.domain)));
          },
        ),
        ...others.map(fallbackStep),
      ];
    },
    remove: (account, objects) =>
      sitesOf(account, objects).map(({ site, named }) => removeStep(site, named('certificate'))),
    changeObjects(account, before, after) {
      const now = new Set(after.domains.map((d) => d.domain));
      const was = new Set(before.domains.map((d) => d.domain));
      const [, ...gone] = sitesOf(account, before);
      const [, ...added] = sitesOf(account, after);
      return [
        ...gone
          .filter((s) => !now.has(s.site.domain))
          .map(({ site, named }) => removeStep(site, named('certificate'))),
        ...added.filter((s) => !was.has(s.site.domain)).map(fallbackStep),
      ];
    },
    async resume(account, objects) {
      // A certificate written when nginx's master read them all (root's alone) is given to its workers.
      const gid = ctx.systemUser(linux.webUser).gid;
      for (const { site } of sitesOf(account, objects)) {
        const file = ctx.path(certificateFile(site.domain));
        const found = lstatSync(file, { throwIfNoEntry: false });
        if (found?.isFile() && (found.gid !== gid || (found.mode & 0o777) !== 0o640))
          giveFile(file, 0, gid, 0o640);
      }
    },
    async reconcile(account, objects) {
      for (const { site } of sitesOf(account, objects))
        if (!existsSync(ctx.path(certificateFile(site.domain)))) {
          await writeFallback(site);
          component.onCertificate?.(site);
        }
    },
    async purge(account) {
      await removeStep(account).run();
    },
    async purgeDomain(domain) {
      for (const file of [ctx.path(certificateFile(domain)), stateFile(domain)]) removeFile(file);
      removeDirectory(ctx.path(dirOf(domain)));
    },
    inspect(_accounts, sites) {
      const differences: string[] = [];
      for (const { site, kind } of sites)
        if (!existsSync(ctx.path(certificateFile(site.domain))))
          differences.push(
            `${kind === 'main' ? site.user : `${site.user} (${site.domain})`}: no certificate`,
          );
      const expected = new Set(sites.map((s) => domainFile(s.site.domain, '')));
      return [
        ...differences,
        ...strayFiles(
          ctx,
          linux.certDir,
          expected,
          '',
          'certificate directory',
          (name) => !name.startsWith('fallback-ca.') && name !== 'host',
        ),
      ];
    },
  };
  return component;
}
