// The account record of the seed spec (CONTRACT §7), rendered from an Account in one place.
import type { Account } from '../store/accounts.ts';
import type { Package } from '../store/packages.ts';
import type { HostingProfile } from '../store/servers.ts';

/** What a record takes from the configuration of the account's server. */
export type Hosting = Pick<HostingProfile, 'sharedIpv4' | 'sharedIpv6' | 'shell'>;

import { formatLimit, formatSwitch } from '../core/values.ts';

export const NOLOGIN = '/usr/sbin/nologin';

const pad = (n: number) => String(n).padStart(2, '0');
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `YYYY-MM-DD HH:MM` in the server's time zone. */
export function formatSetupTime(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

function zoneAbbreviation(date: Date): string {
  const part = new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' })
    .formatToParts(date)
    .find((p) => p.type === 'timeZoneName');
  return part?.value ?? 'UTC';
}

/** `Saturday, 21-Nov-2026 10:42:07, UTC` in the server's time zone. */
export function formatSuspendTime(date: Date): string {
  const day = `${pad(date.getDate())}-${MONTHS[date.getMonth()]}-${date.getFullYear()}`;
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return `${WEEKDAYS[date.getDay()]}, ${day} ${time}, ${zoneAbbreviation(date)}`;
}

/** The record as createacct returns it: no is_reseller, is_suspended or usage fields. */
export function createdRecord(account: Account, hosting: Hosting) {
  const { limits } = account;
  return {
    user: account.user,
    domain: account.domain,
    contactemail: account.contactEmail,
    package: account.package,
    feature: account.feature,
    owner: account.owner,
    homedir: account.homedir,
    language: account.language,
    theme: account.theme,
    mailserver: account.mailserver,
    dkim: formatSwitch(account.dkim),
    spf: formatSwitch(account.spf),
    setuptime: formatSetupTime(account.setupAt),
    nameservers: account.nameservers,
    dedicatedip: {
      ipv4: account.dedicatedIpv4 ?? hosting.sharedIpv4,
      ipv6: account.dedicatedIpv6 ?? hosting.sharedIpv6,
      status: formatSwitch(account.dedicatedIpv4 !== null),
      status6: formatSwitch(account.dedicatedIpv6 !== null),
    },
    shell: account.shellEnabled ? { shell: hosting.shell, status: 'on' } : { shell: NOLOGIN, status: 'off' },
    reseller: {
      status: formatSwitch(account.reseller !== null),
      selfown: formatSwitch(account.reseller?.selfown ?? false),
      alpha: formatSwitch(account.reseller?.alpha ?? false),
    },
    addondomains: formatLimit(limits.addondomains),
    parkeddomains: formatLimit(limits.parkeddomains),
    subdomains: formatLimit(limits.subdomains),
    email: formatLimit(limits.email_accounts),
    ftp: formatLimit(limits.ftp),
    sql: formatLimit(limits.sql),
    maillist: formatLimit(limits.maillist),
    bandwidth: formatLimit(limits.bandwidth),
    quota: formatLimit(limits.quota),
    mailquota: formatLimit(limits.mailquota),
    server: account.server ?? '',
  };
}

/** The record as listaccts returns it. */
export function listedRecord(account: Account, hosting: Hosting) {
  return {
    ...createdRecord(account, hosting),
    is_reseller: account.reseller ? 'yes' : 'no',
    is_suspended: account.suspension ? 'yes' : 'no',
  };
}

/** The record as accountsummary returns it: with the usage figures. */
export function summaryRecord(account: Account, hosting: Hosting) {
  return {
    ...listedRecord(account, hosting),
    bandwidth_usage: account.usage.bandwidth,
    quota_usage: account.usage.quota,
  };
}

export function suspendedRecord(account: Account) {
  return {
    user: account.user,
    reason: account.suspension?.reason ?? '',
    suspendtime: formatSuspendTime(account.suspension?.at ?? new Date(0)),
  };
}

export function packageObject(pkg: Package) {
  const { limits } = pkg;
  return {
    name: pkg.name,
    quota: formatLimit(limits.quota),
    bandwidth: formatLimit(limits.bandwidth),
    addondomains: formatLimit(limits.addondomains),
    parkeddomains: formatLimit(limits.parkeddomains),
    subdomains: formatLimit(limits.subdomains),
    email_accounts: formatLimit(limits.email_accounts),
    ftp: formatLimit(limits.ftp),
    sql: formatLimit(limits.sql),
    maillist: formatLimit(limits.maillist),
    mailquota: formatLimit(limits.mailquota),
    feature: pkg.feature,
    ipv4: formatSwitch(pkg.ipv4),
    ipv6: formatSwitch(pkg.ipv6),
    shell: formatSwitch(pkg.shell),
  };
}
