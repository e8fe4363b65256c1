// `berth doctor`: every difference between the store's accounts and the system below the root.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config.ts';
import { NOLOGIN } from '../../operations/record.ts';
import type { Account } from '../../store/accounts.ts';
import { readIfExists, under } from './files.ts';
import { findSystemUser, shadowPassword, systemUsers } from './passwd.ts';

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
    if (!existsSync(path(join(account.homedir, 'public_html'))))
      say(account, `no ${join(account.homedir, 'public_html')}`);
    const block = readIfExists(path(join(linux.nginxDir, `${account.domain}.conf`)));
    if (block === null) say(account, 'no web server block');
    else if (block.includes('return 503;') !== (account.suspension !== null)) {
      say(
        account,
        account.suspension
          ? 'web server block still serves the suspended site'
          : 'web server block answers 503 for an active account',
      );
    }
    if (!existsSync(path(join(linux.zoneDir, `${account.domain}.db`)))) say(account, 'no DNS zone');
    if (account.dkim && !existsSync(path(join(linux.dkimDir, `${account.domain}.private`))))
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
    for (const file of filesIn(path(dir), suffix)) {
      const domain = file.slice(0, -suffix.length);
      if (!domains.has(domain))
        differences.push(`${domain}: ${what} ${join(dir, file)} with no account in the store`);
    }
  }
  return differences;
}
