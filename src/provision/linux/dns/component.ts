// The dns component: the zone of each domain of the account but its subdomains (SOA, NS, A/AAAA,
// www, MX and mail for local mail, SPF, and the account's DKIM key's record in the main domain's
// and in each addon and parked domain's, whose mail is signed with the same key), a subdomain's
// records (and its www) in the zone of the account's domain it lies under, checked with
// named-checkzone. Each zone is one of BIND's added zones (bind.ts: `rndc addzone`, kept by BIND
// across restarts), so that a zone added or removed costs BIND that zone alone. A domain added or
// removed brings or takes its zone, or rewrites its parent's; a zone's serial grows with every
// change of its records, so that the serial BIND serves tells that the change is live. At start,
// BIND's added zones are brought in line with the zone files. The DKIM key is made here for now,
// since the zone publishes it; the mail component signs with it.
import { createPublicKey } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import { type Component, type LinuxContext, type Site, sitesOf, strayFiles } from '../context.ts';
import { domainFile, giveFile, readIfExists, removeFile, restoreFile, writeFileAtomic } from '../files.ts';
import { systemGroupId } from '../passwd.ts';
import { render } from '../templates.ts';
import { bindService, zoneSerial } from './bind.ts';
import { dkimKeyFile, dkimPoolDir, dkimTxtStrings, generateDkimKey, nameFits, signsMail } from './dkim.ts';
import { DkimKeyPool } from './dkim-pool.ts';

const ZONE = '.db';

export interface DnsComponent extends Component {
  /** The DKIM keys made ahead (refilled while serving: the driver starts it with its background work). */
  keyPool: DkimKeyPool;
}

export function dnsComponent(ctx: LinuxContext): DnsComponent {
  const { linux, config } = ctx;
  const keyPool = new DkimKeyPool(ctx.path(dkimPoolDir(linux.dkimDir)), { size: linux.dkimKeysAhead });
  const zonePath = (account: Account) => ctx.path(join(linux.zoneDir, domainFile(account.domain, ZONE)));
  const dkimPaths = (account: Account) => ({
    key: ctx.path(dkimKeyFile(linux.dkimDir, account.domain)),
    txt: ctx.path(join(linux.dkimDir, domainFile(account.domain, '.txt'))),
  });

  const bind = bindService(ctx);
  /** A zone's file as BIND reads it (the system's path, whatever root Berth writes below). */
  const bindFile = (domain: string) => join(linux.zoneDir, domainFile(domain, ZONE));

  /** Every zone there is a file of, and the file BIND reads it from; a long domain's name is in its $ORIGIN. */
  function zoneFiles(): Map<string, string> {
    const dir = ctx.path(linux.zoneDir);
    const files = existsSync(dir)
      ? readdirSync(dir).filter((f) => f.endsWith(ZONE) && !f.startsWith('.'))
      : [];
    const zones = new Map<string, string>();
    for (const file of files.sort()) {
      let domain = file.slice(0, -ZONE.length);
      if (file.length === 255)
        domain = /^\$ORIGIN (\S+)\.$/m.exec(readIfExists(join(dir, file)) ?? '')?.[1] ?? domain;
      zones.set(domain, join(linux.zoneDir, file));
    }
    return zones;
  }

  /**
   * The zone list an older Berth wrote and named.conf.local may still include: kept, with no zone
   * in it (BIND refuses a zone both included and added). One that still names zones is emptied and
   * BIND reads its configuration again, dropping them, before they are added (a moment without
   * them, once).
   */
  async function retireZoneList(): Promise<void> {
    const list = ctx.path(linux.zoneList);
    const before = readIfExists(list);
    const content = "// Berth's zones are added to BIND with rndc addzone: this file names none.\n";
    if (before === content) return;
    writeFileAtomic(list, content, 0o640);
    const bindGroup = systemGroupId(ctx.root, 'bind');
    if (bindGroup !== undefined) giveFile(list, 0, bindGroup);
    if (before !== null && /^zone "/m.test(before)) await bind.rndc('reconfig');
  }

  /**
   * The zone's text: its serial is the file's when nothing else changed, else the next one, at
   * least the day's first (YYYYMMDD01).
   */
  function zone(account: Account, dkimPublic: string | null, now: Date, subdomains: string[] = []): string {
    const today = `${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}${String(now.getUTCDate()).padStart(2, '0')}01`;
    const was = readIfExists(zonePath(account));
    const previous = zoneSerial(was);
    if (previous !== null && zoneText(account, dkimPublic, String(previous), subdomains) === was) return was;
    const serial = String(Math.max(Number(today), (previous ?? 0) + 1));
    return zoneText(account, dkimPublic, serial, subdomains);
  }

  function zoneText(
    account: Account,
    dkimPublic: string | null,
    serial: string,
    subdomains: string[],
  ): string {
    const ipv4 = account.dedicatedIpv4 ?? config.sharedIpv4;
    const ipv6 = account.dedicatedIpv6 ?? config.sharedIpv6;
    const spf = ['v=spf1', 'a', ...(account.mailserver === 'local' ? ['mx'] : []), `ip4:${ipv4}`];
    if (ipv6) spf.push(`ip6:${ipv6}`);
    spf.push('~all');
    // A name longer than DNS allows (a long domain's `www` or `mail`) cannot exist: its record is
    // left out, and mail goes to the domain's own address instead of mail.<domain>.
    const fits = (label: string) => nameFits(label, account.domain);
    const mailHost = fits('mail') ? `mail.${account.domain}.` : `${account.domain}.`;
    const blocks = {
      ns_records: account.nameservers.map((ns) => `@       IN NS   ${ns}.`).join('\n'),
      aaaa_records: ipv6 ? `@       IN AAAA ${ipv6}` : '',
      www_record: fits('www') ? 'www     IN CNAME @' : '',
      mail_records:
        account.mailserver === 'local'
          ? `@       IN MX 10 ${mailHost}${fits('mail') ? `\nmail    IN A    ${ipv4}` : ''}`
          : '',
      spf_record: account.spf ? `@       IN TXT  "${spf.join(' ')}"` : '',
      dkim_record: dkimPublic
        ? `default._domainkey IN TXT ( ${dkimTxtStrings(dkimPublic)
            .map((s) => `"${s}"`)
            .join(' ')} )`
        : '',
    };
    const hostmaster = fits('hostmaster') ? `hostmaster.${account.domain}` : `hostmaster.${config.hostName}`;
    // A subdomain's site answers for its www too (and its certificate covers it), as a domain's.
    const records = subdomains
      .map(
        (label) =>
          `${label} IN A    ${ipv4}\n${ipv6 ? `${label} IN AAAA ${ipv6}\n` : ''}${
            nameFits('www', `${label}.${account.domain}`) ? `www.${label} IN CNAME ${label}\n` : ''
          }`,
      )
      .join('');
    return `${render(
      'dns/zone.db',
      {
        user: account.user,
        domain: account.domain,
        primary_ns: account.nameservers[0]!,
        hostmaster,
        serial,
        ipv4,
      },
      blocks,
    )}${records}`;
  }

  /**
   * The account's zones: each domain but a subdomain, with the labels of the subdomains that lie
   * under it (a subdomain under no domain of the account has no records here).
   */
  function zonesOf(sites: Site[]): { zone: Site; subdomains: string[] }[] {
    const zones = sites
      .filter((s) => s.kind !== 'subdomain')
      .map((zone) => ({ zone, subdomains: [] as string[] }));
    for (const { site } of sites.filter((s) => s.kind === 'subdomain')) {
      const parent = zones
        .filter(({ zone }) => site.domain.endsWith(`.${zone.site.domain}`))
        .sort((a, b) => b.zone.site.domain.length - a.zone.site.domain.length)[0];
      parent?.subdomains.push(site.domain.slice(0, -parent.zone.site.domain.length - 1));
    }
    return zones;
  }

  /** The zones a change made that had no file before: BIND checks them as it adds them. */
  const newZones = new Set<string>();

  /**
   * named-checkzone on the zone written, the proof BIND loads it: a zone BIND already has is read
   * again by `rndc reload`, which answers before the zone loads and keeps the old one if it does
   * not. A zone new to BIND needs none: BIND's addzone loads it before it answers, and refuses it,
   * keeping nothing, when it does not load (about 25 ms a zone saved).
   */
  async function checkZone(account: Account): Promise<void> {
    if (newZones.delete(account.domain) && bind.checksAddedZones) return;
    if (linux.checkZone.length > 0)
      await ctx.runner.run([...linux.checkZone, '--', account.domain, zonePath(account)]);
  }

  /** Writes (or removes: null) a zone's file; BIND is to read the zone if it changed. */
  function putZone(account: Account, text: string | null, repair = false): void {
    if (readIfExists(zonePath(account)) === text) {
      // A repair has BIND read it anyway: BIND may have lost it (it is added again then).
      if (repair && text !== null)
        bind.zoneWritten(account.domain, zoneSerial(text), bindFile(account.domain), false);
      else bind.zoneUnchanged();
      return;
    }
    const added = !existsSync(zonePath(account));
    restoreFile(zonePath(account), text, 0o644);
    bind.zoneWritten(account.domain, zoneSerial(text), bindFile(account.domain), added);
  }

  /** The zone file, as one step. */
  function zoneStep(account: Account, content: () => string | null, name = 'DNS zone') {
    let before: string | null = null;
    return ctx.step(
      name,
      async () => {
        before = readIfExists(zonePath(account));
        const text = content();
        if (before === null && text !== null) newZones.add(account.domain);
        else newZones.delete(account.domain);
        putZone(account, text);
      },
      async () => {
        newZones.delete(account.domain);
        putZone(account, before);
      },
      bind,
    );
  }

  /** The account's DKIM public key: the existing one, or a new pair (made ahead when there is one). */
  async function dkimKey(account: Account): Promise<string> {
    const keys = dkimPaths(account);
    const existing = readIfExists(keys.key) ?? (keyPool.take(keys.key) ? readIfExists(keys.key) : null);
    let publicKey: string;
    if (existing)
      publicKey = createPublicKey(existing).export({ type: 'spki', format: 'der' }).toString('base64');
    else {
      const key = await generateDkimKey();
      writeFileAtomic(keys.key, key.privatePem, 0o600);
      publicKey = key.publicBase64;
    }
    writeFileAtomic(keys.txt, `${dkimTxtStrings(publicKey).join('')}\n`, 0o644);
    return publicKey;
  }

  /** The account's DKIM public key as it is, without making one; null when it has none. */
  function existingDkimKey(account: Account): string | null {
    if (!signsMail(account)) return null;
    const existing = readIfExists(dkimPaths(account).key);
    return existing && createPublicKey(existing).export({ type: 'spki', format: 'der' }).toString('base64');
  }

  /**
   * The zone of one of the account's zone domains: the main domain's and each addon or parked
   * domain's publish the account's DKIM key (the mail of each is signed with it).
   */
  const zoneOf = (site: Account, dkimPublic: string | null, subdomains: string[]) =>
    zone(site, dkimPublic, new Date(), subdomains);

  /** Writes a zone and checks it, as two steps. */
  const writeZone = ({ site, named }: Site, content: () => string) => [
    zoneStep(site, content, named('DNS zone')),
    ctx.step(named('DNS zone check'), () => checkZone(site)),
  ];

  return {
    name: 'dns',
    keyPool,
    services: [bind],
    async prepare() {
      await retireZoneList();
      if (ctx.live) await bind.sync(zoneFiles(), linux.zoneDir);
    },
    create(account, origin, objects) {
      const [main, ...others] = zonesOf(sitesOf(account, objects));
      let dkimPublic: string | null = null;
      // A moved account signs with the key its zone published on its old server.
      const movedKey = 'moved' in origin ? origin.moved.dkimKey : null;
      const keys = dkimPaths(account);
      return [
        ...(signsMail(account)
          ? [
              ctx.step(
                'DKIM key',
                async () => {
                  if (movedKey) writeFileAtomic(keys.key, movedKey, 0o600);
                  dkimPublic = await dkimKey(account);
                },
                async () => {
                  removeFile(keys.key);
                  removeFile(keys.txt);
                },
              ),
            ]
          : []),
        zoneStep(account, () => zone(account, dkimPublic, new Date(), main!.subdomains)),
        ctx.step('DNS zone check', () => checkZone(account)),
        ...others.flatMap(({ zone, subdomains }) =>
          writeZone(zone, () => zoneOf(zone.site, dkimPublic, subdomains)),
        ),
      ];
    },
    changeObjects(account, before, after) {
      const was = new Map(zonesOf(sitesOf(account, before)).map((z) => [z.zone.site.domain, z]));
      const now = zonesOf(sitesOf(account, after));
      const staying = new Set(now.map((z) => z.zone.site.domain));
      const key = () => existingDkimKey(account);
      return [
        // A zone that goes, and one that comes or whose subdomains changed (its parent's).
        ...[...was.values()]
          .filter((z) => !staying.has(z.zone.site.domain))
          .map(({ zone: { site, named } }) => zoneStep(site, () => null, named('DNS zone'))),
        ...now
          .filter((z) => was.get(z.zone.site.domain)?.subdomains.join() !== z.subdomains.join())
          .flatMap(({ zone, subdomains }) => writeZone(zone, () => zoneOf(zone.site, key(), subdomains))),
      ];
    },
    remove(account, objects) {
      const keys = dkimPaths(account);
      const [, ...others] = zonesOf(sitesOf(account, objects));
      return [
        ...others.map(({ zone: { site, named } }) => zoneStep(site, () => null, named('DNS zone'))),
        zoneStep(account, () => null),
        ctx.fileStep('DKIM key', keys.key, 0o600, () => null),
        ctx.fileStep('DKIM record', keys.txt, 0o644, () => null),
      ];
    },
    async reconcile(account, objects) {
      const dkimPublic = signsMail(account) ? await dkimKey(account) : null;
      for (const {
        zone: { site },
        subdomains,
      } of zonesOf(sitesOf(account, objects))) {
        putZone(site, zoneOf(site, dkimPublic, subdomains), true);
        await checkZone(site);
      }
    },
    async purge(account) {
      const keys = dkimPaths(account);
      for (const file of [keys.key, keys.txt]) removeFile(file);
      putZone(account, null);
    },
    async purgeDomain(domain) {
      const file = ctx.path(join(linux.zoneDir, domainFile(domain, ZONE)));
      if (!existsSync(file)) return;
      removeFile(file);
      bind.zoneWritten(domain, null, bindFile(domain), false);
    },
    async inspect(accounts, sites) {
      const differences: string[] = [];
      const added = await bind.listAdded().catch((error: unknown) => {
        differences.push(`BIND's added zones could not be read: ${(error as Error).message}`);
        return null;
      });
      // Without allow-new-zones BIND takes no added zone (and serves none it has in its database).
      if (ctx.live && linux.checkBindConfig.length > 0) {
        const printed = await ctx.runner.run([...linux.checkBindConfig]).then(
          ({ stdout }) => stdout,
          (error: Error) => {
            differences.push(`BIND's configuration could not be read: ${error.message}`);
            return null;
          },
        );
        if (printed !== null && !/^\s*allow-new-zones yes;$/m.test(printed))
          differences.push(
            "BIND takes no added zones: add 'allow-new-zones yes;' to its options (named.conf.options), then rndc reconfig",
          );
      }
      const zones = sites.filter((s) => s.kind !== 'subdomain');
      for (const { site, kind } of zones) {
        const whose = kind === 'main' ? site.user : `${site.user} (${site.domain})`;
        if (!existsSync(zonePath(site))) differences.push(`${whose}: no DNS zone`);
        else if (added && added.get(site.domain) !== bindFile(site.domain))
          differences.push(`${whose}: zone not among BIND's added zones`);
      }
      for (const account of accounts)
        if (signsMail(account) && !existsSync(dkimPaths(account).key))
          differences.push(`${account.user}: no DKIM key`);
      return [
        ...differences,
        ...strayFiles(
          ctx,
          linux.zoneDir,
          new Set(zones.map((s) => domainFile(s.site.domain, ZONE))),
          ZONE,
          'DNS zone',
        ),
        ...strayFiles(
          ctx,
          linux.dkimDir,
          new Set(accounts.map((a) => domainFile(a.domain, '.private'))),
          '.private',
          'DKIM key',
        ),
      ];
    },
  };
}
