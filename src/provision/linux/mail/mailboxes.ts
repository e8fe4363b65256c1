// The holder's mailboxes and forwarders (CONTRACT §14) in the mail component (component.ts): what a
// mail domain's record says of them (tables.ts writes the tables from it), the directory of each
// mailbox below the account's home, and what `berth doctor` finds amiss. A mailbox's directory is
// <home>/mail/<domain>/<local>, the account's own (mode 0700), holding its Maildir; it goes with
// the mailbox (in the change's last step, which is not undone) or with the home.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import { domainOfAddress } from '../../../store/mailboxes.ts';
import type { AccountObjects } from '../../../store/objects.ts';
import { StepRefused } from '../../driver.ts';
import type { LinuxContext, LinuxStep } from '../context.ts';
import { deleteSubvolumesBelow } from '../filesystems.ts';
import {
  kindOf,
  makeDirectories,
  OtherFilesystem,
  removeMadeDirectories,
  removeTree,
  UnsafePath,
} from '../home.ts';
import type { DovecotDatabase } from './dovecot-db.ts';
import { type ForwarderEntry, type MailboxEntry, type MailDomain, mailboxPath } from './lines.ts';

const MAILBOX_MODE = 0o700;

const localOf = (email: string) => email.slice(0, email.lastIndexOf('@'));

/** The mailboxes and forwarders a domain's record holds, from the account's objects. */
export function mailAt(
  domain: string,
  objects: AccountObjects,
): { mailboxes: MailboxEntry[]; forwarders: ForwarderEntry[] } {
  const at = (email: string) => domainOfAddress(email) === domain;
  return {
    mailboxes: objects.mailboxes
      .filter((m) => at(m.email))
      .map((m) => ({ local: localOf(m.email), hash: m.passwordHash, quota: m.quota })),
    forwarders: objects.forwarders
      .filter((f) => at(f.email))
      .map((f) => ({ local: localOf(f.email), to: f.to })),
  };
}

/** Whether the domain's mailboxes or forwarders differ between two sets of objects. */
export function mailChanged(domain: string, before: AccountObjects, after: AccountObjects): boolean {
  return JSON.stringify(mailAt(domain, before)) !== JSON.stringify(mailAt(domain, after));
}

/** Addresses of `before`'s mailboxes that `after` does not have. */
export function removedMailboxes(before: AccountObjects, after: AccountObjects): string[] {
  const now = new Set(after.mailboxes.map((m) => m.email));
  return before.mailboxes.map((m) => m.email).filter((email) => !now.has(email));
}

export function mailboxSteps(ctx: LinuxContext) {
  /**
   * Makes a mailbox's directory and its Maildir, the account's, each missing one on the way too;
   * a link the account planted on the way is refused, never followed. Undone by removing what it
   * made, where still empty.
   */
  function directoryStep(account: Account, email: string): LinuxStep {
    const home = ctx.path(account.homedir);
    const components = [...mailboxPath(domainOfAddress(email), localOf(email)), 'Maildir'];
    let made: string[][] = [];
    return ctx.step(
      `mailbox ${email}`,
      async () => {
        const { uid, gid } = ctx.systemUser(account.user);
        try {
          made = makeDirectories(home, components, { uid, gid }, MAILBOX_MODE);
        } catch (error) {
          if (error instanceof UnsafePath)
            throw new StepRefused(
              'email',
              `~/${components.join('/')}: ${error.message}, which is never followed`,
            );
          throw error;
        }
      },
      async () => removeMadeDirectories(home, made),
    );
  }

  /**
   * Removes a mailbox's directory and the mail in it (not undone: the change's last step), in a
   * thread of its own; a btrfs subvolume the account made in it is deleted by id, then the rest.
   */
  async function removeDirectory(account: Account, email: string): Promise<void> {
    const home = ctx.path(account.homedir);
    const components = mailboxPath(domainOfAddress(email), localOf(email));
    try {
      await removeTree(home, components);
    } catch (error) {
      if (!(error instanceof OtherFilesystem)) throw error;
      await deleteSubvolumesBelow(ctx.runner, home, components);
      await removeTree(home, components);
    }
  }

  /**
   * What differs between the store's mailboxes and forwarders and the records and tables: each
   * mailbox in its domain's record as the store has it, with its login (unless the account is
   * suspended), its user and its Maildir; each forwarder an alias; nothing in a record the store
   * lacks.
   */
  function inspect(
    accounts: readonly Account[],
    objects: ReadonlyMap<string, AccountObjects>,
    records: readonly MailDomain[],
    /** Postfix's aliases table, `address targets` a line. */
    aliasTable: string,
    dovecot: DovecotDatabase,
  ): string[] {
    const differences: string[] = [];
    const logins = new Set(dovecot.rows('logins').keys());
    const users = new Set(dovecot.rows('users').keys());
    const aliases = new Set(aliasTable.split('\n').map((line) => line.split(/\s/)[0]));
    const byDomain = new Map(records.map((r) => [r.domain, r]));
    const expected = new Set<string>();
    for (const account of accounts) {
      const own = objects.get(account.user);
      if (!own || account.mailserver !== 'local') continue;
      for (const mailbox of own.mailboxes) {
        const { email } = mailbox;
        expected.add(email);
        const record = byDomain.get(domainOfAddress(email));
        const entry = record?.mailboxes?.find((m) => m.local === localOf(email));
        if (!entry) differences.push(`${account.user}: mailbox ${email} not in its mail domain's record`);
        else if (entry.hash !== mailbox.passwordHash || entry.quota !== mailbox.quota)
          differences.push(`${account.user}: mailbox ${email}: password or quota not as stored`);
        else if (!users.has(email)) differences.push(`${account.user}: mailbox ${email}: no Dovecot user`);
        else if (account.suspension === null && !logins.has(email))
          differences.push(`${account.user}: mailbox ${email}: no login`);
        else if (account.suspension !== null && logins.has(email))
          differences.push(`${account.user}: mailbox ${email}: logs in while the account is suspended`);
        const dir = [...mailboxPath(domainOfAddress(email), localOf(email)), 'Maildir'];
        if (existsSync(ctx.path(account.homedir)) && kindOf(ctx.path(account.homedir), dir) !== 'directory')
          differences.push(`${account.user}: mailbox ${email}: no ${join(account.homedir, ...dir)}`);
      }
      for (const forwarder of own.forwarders) {
        expected.add(forwarder.email);
        if (!aliases.has(forwarder.email))
          differences.push(`${account.user}: forwarder ${forwarder.email} not in the aliases table`);
      }
    }
    for (const record of records)
      for (const entry of [...(record.mailboxes ?? []), ...(record.forwarders ?? [])]) {
        const email = `${entry.local}@${record.domain}`;
        if (!expected.has(email))
          differences.push(`${record.user}: ${email} in the mail tables with no such object`);
      }
    return differences;
  }

  return { directoryStep, removeDirectory, inspect };
}
