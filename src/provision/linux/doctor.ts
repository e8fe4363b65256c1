// `berth doctor`: every difference between the store's accounts and the system below the root.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config.ts';
import { NOLOGIN } from '../../operations/record.ts';
import type { Account } from '../../store/accounts.ts';
import { signsMail } from './dkim.ts';
import { domainFile, readIfExists, under } from './files.ts';
import { type Kind, kindOf } from './home.ts';
import { findSystemUser, shadowPassword, systemUsers } from './passwd.ts';

const describe = (kind: Kind) =>
  ({
    missing: 'missing',
    link: 'a symbolic link (not followed)',
    file: 'a file, not a directory',
    other: 'not a directory',
    directory: 'a directory',
  })[kind];

function filesIn(dir: string, suffix: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((name) => name.endsWith(suffix) && !name.startsWith('.'));
}

export async function inspectSystem(config: Config, accounts: readonly Account[]): Promise<string[]> {
  const { linux } = config;
  const root = linux.systemRoot;
  const path = (p: string) => under(root, p);
  const differences: string[] = [];
  const say = (account: Account, what: string) => differences.push(`${account.user}: ${what}`);

  for (const account of accounts) {
    const user = findSystemUser(root, account.user);
    if (!user) {
      say(account, 'no system user');
    } else {
      if (user.home !== account.homedir) say(account, `system home is ${user.home}, not ${account.homedir}`);
      if (user.gecos !== `Berth ${account.domain}`)
        say(account, `system user's GECOS is "${user.gecos}", not "Berth ${account.domain}"`);
      const locked = shadowPassword(root, account.user)?.startsWith('!') ?? false;
      if (locked !== (account.suspension !== null))
        say(
          account,
          locked ? 'system user locked but account active' : 'account suspended but system user not locked',
        );
      const shell = account.suspension || !account.shellEnabled ? NOLOGIN : config.shell;
      if (user.shell !== shell) say(account, `login shell is ${user.shell}, not ${shell}`);
    }
    const home = path(account.homedir);
    const homeKind = kindOf(home, []);
    const publicHtml = homeKind === 'directory' ? kindOf(home, ['public_html']) : 'missing';
    if (homeKind !== 'directory') say(account, `${account.homedir} is ${describe(homeKind)}`);
    else if (publicHtml !== 'directory')
      say(account, `${join(account.homedir, 'public_html')} is ${describe(publicHtml)}`);
    const block = readIfExists(path(join(linux.nginxDir, domainFile(account.domain, '.conf'))));
    if (block === null) say(account, 'no web server block');
    else if (block.includes('return 503;') !== (account.suspension !== null)) {
      say(
        account,
        account.suspension
          ? 'web server block still serves the suspended site'
          : 'web server block answers 503 for an active account',
      );
    }
    if (!existsSync(path(join(linux.zoneDir, domainFile(account.domain, '.db')))))
      say(account, 'no DNS zone');
    if (signsMail(account) && !existsSync(path(join(linux.dkimDir, domainFile(account.domain, '.private')))))
      say(account, 'no DKIM key');
  }

  const users = new Set(accounts.map((a) => a.user));
  const domains = new Set(accounts.map((a) => a.domain));
  for (const user of systemUsers(root)) {
    if (user.gecos.startsWith('Berth ') && !users.has(user.name)) {
      differences.push(`${user.name}: system user with no account in the store`);
    }
  }
  for (const [dir, suffix, what] of [
    [linux.nginxDir, '.conf', 'web server block'],
    [linux.zoneDir, '.db', 'DNS zone'],
    [linux.dkimDir, '.private', 'DKIM key'],
  ] as const) {
    const expected = new Set([...domains].map((domain) => domainFile(domain, suffix)));
    for (const file of filesIn(path(dir), suffix)) {
      if (!expected.has(file))
        differences.push(
          `${file.slice(0, -suffix.length)}: ${what} ${join(dir, file)} with no account in the store`,
        );
    }
  }
  return differences;
}
