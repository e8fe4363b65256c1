// A throwaway system root for the linux driver's tests, and nginx's own check of what is in it.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { sha512Crypt } from '../../src/auth/sha512-crypt.js';
import type { Config, LinuxConfig } from '../../src/config/index.ts';
import type { LinuxContext } from '../../src/provision/linux/context.ts';
import { linuxDriver } from '../../src/provision/linux/driver.ts';
import type { PostfixTable } from '../../src/provision/linux/mail/lines.ts';
import { TABLE_NAMES } from '../../src/provision/linux/mail/socketmap.ts';
import { mailTables } from '../../src/provision/linux/mail/tables.ts';
import { type CommandRunner, execRunner } from '../../src/provision/linux/run.ts';
import { type Harness, setup, tempDir } from '../helpers.ts';

/** A root with a copy of this machine's user database and the directories the driver writes. */
export function makeSystemRoot(): string {
  const root = tempDir('berth-root-');
  // An account's own user reaches its home here as on a real system (a move reads it as that user).
  chmodSync(root, 0o755);
  mkdirSync(join(root, 'etc'), { recursive: true });
  for (const file of ['passwd', 'group', 'shadow', 'gshadow', 'subuid', 'subgid', 'login.defs']) {
    if (existsSync(`/etc/${file}`)) copyFileSync(`/etc/${file}`, join(root, 'etc', file));
  }
  for (const dir of [
    'home',
    'etc/nginx/sites-enabled',
    'etc/nginx/conf.d',
    'etc/bind/zones',
    'etc/berth/dkim',
    'etc/berth/certs',
    'etc/berth/php-fpm',
    'var/www/berth-acme',
    'run/berth/php',
    'var/log/nginx',
    'run',
  ]) {
    mkdirSync(join(root, dir), { recursive: true });
  }
  copyFileSync('/etc/nginx/fastcgi_params', join(root, 'etc/nginx/fastcgi_params'));
  // A small jail template where jailkit would build the real one (berth sandbox's test does that).
  const template = join(root, 'home/.berth-jail');
  for (const dir of ['usr/bin', 'etc', 'dev']) mkdirSync(join(template, dir), { recursive: true });
  copyFileSync('/usr/bin/true', join(template, 'usr/bin/true'));
  symlinkSync('usr/bin', join(template, 'bin'));
  writeFileSync(
    join(root, 'etc/nginx/nginx.conf'),
    [
      `pid ${root}/run/nginx.pid;`,
      `error_log ${root}/var/log/nginx/error.log;`,
      'events {}',
      `http { access_log off; include ${root}/etc/nginx/conf.d/*.conf; include ${root}/etc/nginx/sites-enabled/*.conf; }`,
      '',
    ].join('\n'),
  );
  return root;
}

/** What nginx finds for a site (`domain`): where its links point, and its suspension file; null for none. */
export function siteOf(
  root: string,
  domain: string,
): { root: string; php: string | null; certificate: string | null; suspended: boolean } | null {
  const dir = join(root, 'var/www/berth-sites', domain);
  if (!existsSync(dir)) return null;
  const link = (name: string) =>
    lstatSync(join(dir, name), { throwIfNoEntry: false }) ? readlinkSync(join(dir, name)) : null;
  return {
    root: readlinkSync(join(dir, 'root')),
    php: link('php'),
    certificate: link('certificate.pem'),
    suspended: existsSync(join(dir, 'suspended')),
  };
}

export function nginxAccepts(root: string): void {
  execFileSync('/usr/sbin/nginx', ['-t', '-q', '-c', join(root, 'etc/nginx/nginx.conf'), '-p', root], {
    stdio: 'pipe',
  });
}

export function linuxSettings(root: string, httpPort: number) {
  return {
    sharedIpv4: '127.0.0.1',
    sharedIpv6: '',
    ipPool: { ipv4: ['127.0.0.10'], ipv6: ['::1'] },
    linux: { systemRoot: root, httpPort, httpsPort: httpPort + 1 },
  };
}

let nextPort = 18080 + (process.pid % 500) * 4;

export interface LinuxHarness extends Harness {
  root: string;
  /** Every command the driver ran, as its argument array. */
  commands: string[][];
  /** What each of those commands was given on standard input (empty for none). */
  inputs: string[];
  /** Name a step here to make it fail. */
  failAt: { step: string | null };
}

/**
 * Journals `operation` as begun on `user`'s account (on `user`.example.com, as createAccount makes
 * it) and never finished: what a process that died in the middle of the call leaves behind.
 */
export function journalUnfinished(h: Harness, user: string, operation: string): void {
  h.services.journal.begin({
    user,
    domain: `${user}.example.com`,
    homedir: `/home/${user}`,
    operation,
    startedAt: new Date().toISOString(),
  });
}

/**
 * Berth in-process on the linux driver, in a throwaway system root of its own; `prepareRoot` runs
 * on the root before the driver starts (a filesystem mounted on its /home, say).
 */
export async function linuxSetup(prepareRoot: (root: string) => void = () => {}): Promise<LinuxHarness> {
  const root = makeSystemRoot();
  prepareRoot(root);
  const commands: string[][] = [];
  const inputs: string[] = [];
  const failAt = { step: null as string | null };
  const real = execRunner();
  const runner: CommandRunner = {
    run(argv, options) {
      commands.push([...argv]);
      inputs.push(options?.input ?? '');
      return real.run(argv, options);
    },
    stream(argv, options) {
      commands.push([...argv]);
      return real.stream(argv, options);
    },
  };
  const settings = linuxSettings(root, nextPort);
  nextPort += 2;
  const h = await setup(
    { driver: 'linux', ...settings },
    {
      makeDriver: async (config: Config) => {
        const driver = linuxDriver({
          config,
          runner,
          hashPassword: async (p) => sha512Crypt(p),
          failAt: () => failAt.step,
        });
        await driver.prepare?.();
        return driver;
      },
    },
  );
  const close = h.close;
  return {
    ...h,
    root,
    commands,
    inputs,
    failAt,
    close: async () => {
      await close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** What the mail tables (mail/tables.ts) need of a context below `root`: its paths, and the root. */
export function mailTablesContext(root: string): LinuxContext {
  const linux = {
    mailDir: '/etc/berth/mail',
    postfixMapDir: '/etc/postfix/berth',
    dovecotMapDir: '/etc/dovecot/berth',
    opendkimMapDir: '/etc/opendkim/berth',
  } as LinuxConfig;
  return { linux, root, live: false, path: (p: string) => join(root, p) } as unknown as LinuxContext;
}

/**
 * Postfix's table by the name main.cf gives it (`senders`, `local-senders`), as Berth serves it
 * from the mail records below `root`: `key value` a line.
 */
export function postfixTable(root: string, name: string): string {
  const tables = mailTables(mailTablesContext(root));
  try {
    if (name === 'local-senders') return tables.text('localSenders');
    const table = Object.entries(TABLE_NAMES).find(([, each]) => each === name)?.[0];
    if (table === undefined) throw new Error(`no Postfix table ${name}`);
    return tables.text(table as PostfixTable);
  } finally {
    tables.database.close();
  }
}

/**
 * Dovecot's rows of `table` (`logins`: login, hash, user; `users`: login, uid, gid, home, quota
 * rule) in the database below `root`, ordered by login: a line each, the fields separated by tabs.
 */
export function dovecotRows(root: string, table: 'logins' | 'users'): string {
  const db = new DatabaseSync(join(root, 'etc/dovecot/berth/mail.sqlite'), { readOnly: true });
  try {
    const rows = db.prepare(`SELECT * FROM ${table} ORDER BY login`).all() as Record<string, unknown>[];
    return rows
      .map(
        (row) =>
          `${Object.values(row)
            .map((v) => v ?? '')
            .join('\t')}\n`,
      )
      .join('');
  } finally {
    db.close();
  }
}

/** Runs `sql` on Dovecot's database below `root`, as another process changing it would. */
export function changeDovecotRows(root: string, sql: string): void {
  const db = new DatabaseSync(join(root, 'etc/dovecot/berth/mail.sqlite'));
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}
