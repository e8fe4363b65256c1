// What the operations on mailboxes, forwarders and mailing lists (CONTRACT §14) share: how each is answered, and
// which addresses an account may make. An address is in one of the account's mail domains (its
// main domain and its addon and parked domains, which the mail component serves when the account's
// mail is local; a subdomain has no mail of its own) and is none of the account's own logins
// (`<user>@<domain>`, whose mail goes to the account's mailbox).
import { apiError, invalid } from '../core/errors.ts';
import { formatLimit } from '../core/values.ts';
import type { Account } from '../store/accounts.ts';
import { domainOfAddress, type Forwarder, type Mailbox } from '../store/mailboxes.ts';
import type { MailingList } from '../store/mailing-lists.ts';
import type { AccountObjects } from '../store/objects.ts';

/** A mailbox as add_mailbox and list_mailboxes answer it: never its password. */
export function mailboxObject(mailbox: Mailbox) {
  return {
    email: mailbox.email,
    domain: domainOfAddress(mailbox.email),
    quota: formatLimit(mailbox.quota),
    created: mailbox.createdAt.toISOString(),
  };
}

export function forwarderObject(forwarder: Forwarder) {
  return {
    email: forwarder.email,
    domain: domainOfAddress(forwarder.email),
    to: forwarder.to,
    created: forwarder.createdAt.toISOString(),
  };
}

export function mailingListObject(list: MailingList) {
  return {
    email: list.email,
    domain: domainOfAddress(list.email),
    owner: list.owner,
    members: list.members,
    created: list.createdAt.toISOString(),
  };
}

/** The account's mailing list at `email`, or 400 object_not_found. */
export function findMailingList(objects: AccountObjects, email: string, param = 'email'): MailingList {
  const found = objects.mailing_lists.find((l) => l.email === email);
  if (!found) throw apiError('object_not_found', { kind: 'mailing list', name: email }, param);
  return found;
}

/**
 * The account's domains whose mail Berth serves: the main one, addon and parked domains, but one
 * whose mail the DNS sends to another server (Domain.mail).
 */
export function mailDomainsOf(objects: AccountObjects): string[] {
  return objects.domains.filter((d) => d.kind !== 'subdomain' && d.mail !== 'elsewhere').map((d) => d.domain);
}

/**
 * Refuses an address the account may not make: its mail is served elsewhere, the domain is not
 * one of its mail domains, or it is one of the account's own logins. Another of its mailboxes,
 * forwarders or mailing lists at the address is 400 object_exists.
 */
export function refuseAddress(account: Account, objects: AccountObjects, email: string): void {
  if (account.mailserver !== 'local')
    throw invalid(
      'email',
      "the account's mail is served elsewhere (mailserver=remote): Berth keeps no mailboxes for it",
    );
  const domain = domainOfAddress(email);
  const domains = mailDomainsOf(objects);
  if (!domains.includes(domain))
    throw invalid(
      'email',
      `an address is in one of the account's main, addon or parked domains (${domains.join(', ')})`,
    );
  if (email === `${account.user}@${domain}`)
    throw invalid('email', `${email} is the account's own address, which it has already`);
  if (objects.mailboxes.some((m) => m.email === email))
    throw apiError('object_exists', { kind: 'mailbox', name: email }, 'email');
  if (objects.forwarders.some((f) => f.email === email))
    throw apiError('object_exists', { kind: 'forwarder', name: email }, 'email');
  if (objects.mailing_lists.some((l) => l.email === email))
    throw apiError('object_exists', { kind: 'mailing list', name: email }, 'email');
}

/** The account's mailbox at `email`, or 400 object_not_found. */
export function findMailbox(objects: AccountObjects, email: string): Mailbox {
  const found = objects.mailboxes.find((m) => m.email === email);
  if (!found) throw apiError('object_not_found', { kind: 'mailbox', name: email }, 'email');
  return found;
}

/**
 * A mailbox's quota in MB (null: none): given, or the account's mailquota; never above the
 * account's mailquota when it has one, and never 0.
 */
export function mailboxQuota(account: Account, given: number | null | undefined): number | null {
  const most = account.limits.mailquota;
  const quota = given === undefined ? most : given;
  if (quota === 0) throw invalid('quota', 'a mailbox quota is at least 1 MB, or "unlimited"');
  if (most !== null && (quota === null || quota > most))
    throw invalid('quota', `at most the account's mail quota, ${most} MB`);
  return quota;
}
