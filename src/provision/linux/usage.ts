// What an account uses: the disk space of its home directory, and the bytes nginx served for each of
// its domains this calendar month (from the sites' access logs, in nginx's default "combined"
// format): an addon domain's visitors count as the main domain's do.
// The disk space is what the account's quota backend counts, where it counts it (one command for
// every account); without one, a walk of the home, in a thread of its own and bounded in time.
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Config } from '../../config/index.ts';
import type { Account } from '../../store/accounts.ts';
import type { Usage } from '../driver.ts';
import { domainFile, siteLogDir, under } from './files.ts';
import { countHomes } from './home.ts';

const MB = 1024 * 1024;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** How long the walk of one home may take; past it, what it counted is stored as a floor. */
export const HOME_WALK_LIMIT_MS = 60_000;

/** Sums the response sizes of the log lines dated in the month of `now` (server time). */
export async function bytesServedThisMonth(logFile: string, now: Date): Promise<number> {
  const month = `/${MONTHS[now.getMonth()]}/${now.getFullYear()}:`;
  let total = 0;
  try {
    const lines = createInterface({ input: createReadStream(logFile), crlfDelay: Number.POSITIVE_INFINITY });
    for await (const line of lines) {
      const match = /\[(\d\d\/\w{3}\/\d{4}):[^\]]*\] "[^"]*" \d{3} (\d+)/.exec(line);
      if (match && `/${match[1]!.slice(3)}:` === month) total += Number(match[2]);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return total;
}

/**
 * What each account uses, by user. `counted` holds the bytes the quota backends count, by user;
 * the homes of the other accounts are walked. An account whose walk never answered is left out.
 */
export async function measureUsage(
  config: Config,
  accounts: readonly Account[],
  counted: ReadonlyMap<string, number>,
  {
    now = new Date(),
    limitMs = HOME_WALK_LIMIT_MS,
    domains,
  }: { now?: Date; limitMs?: number; domains?: ReadonlyMap<string, readonly string[]> | undefined } = {},
): Promise<Map<string, Usage>> {
  const root = config.linux.systemRoot;
  const homeOf = (account: Account) => under(root, account.homedir);
  const walked = await countHomes(
    accounts.filter((account) => !counted.has(account.user)).map(homeOf),
    limitMs,
  );
  const measured = new Map<string, Usage>();
  for (const account of accounts) {
    const bytes = counted.get(account.user);
    const home = bytes === undefined ? walked.get(homeOf(account)) : { bytes, cut: null };
    if (!home) continue;
    // Each site's log, the copy its last monthly rotation left (logrotate may run some hours into
    // the month), and the log of a main site made before logs had a directory of their own.
    let served = 0;
    for (const domain of domains?.get(account.user) ?? [account.domain]) {
      const logDir = siteLogDir(config.linux.logDir, domain);
      for (const log of [join(logDir, 'access.log'), join(logDir, 'access.log.1')])
        served += await bytesServedThisMonth(under(root, log), now);
    }
    served += await bytesServedThisMonth(
      under(root, join(config.linux.logDir, domainFile(account.domain, '.access.log'))),
      now,
    );
    const usage: Usage = { quota: Math.ceil(home.bytes / MB), bandwidth: Math.ceil(served / MB) };
    if (home.cut) usage.partial = home.cut;
    measured.set(account.user, usage);
  }
  return measured;
}
