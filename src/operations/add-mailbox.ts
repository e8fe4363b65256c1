// add_mailbox (CONTRACT §14), an operation of the account holder's (or of an administrator or
// reseller acting for one): a mailbox at an address of one of the account's mail domains, with its
// own password (kept as its hash alone) and quota. Its mail is a Maildir under the account's home;
// it logs in to IMAP and submission with the whole address. The account's email limit is taken
// inside the transaction that adds it (the account's row is locked), so that concurrent adds never
// pass it; the account's own address is not a mailbox and does not count.
import { apiError } from '../core/errors.ts';
import { formatLimit } from '../core/values.ts';
import { uniqueViolation } from '../store/errors.ts';
import { insertMailbox, type Mailbox } from '../store/mailboxes.ts';
import { changeObjects } from './common.ts';
import { mailboxObject, mailboxQuota, refuseAddress } from './mail-objects.ts';
import { defineOperation, kinds, optional, required } from './operation.ts';
import { results } from './results.ts';

export const addMailbox = defineOperation({
  name: 'add_mailbox',
  summary: 'Create a mailbox at an address of one of the account’s domains.',
  changesState: true,
  audiences: ['holder'],
  event: 'mailbox.added',
  params: {
    email: required(
      kinds.mailAddress,
      "The mailbox's address, in the account's main, addon or parked domain",
    ),
    password: required(kinds.password, 'Its password, for IMAP and submission (login: the whole address)'),
    quota: optional(kinds.limit, "Its quota in MB, or `unlimited`; default and most the account's mailquota"),
  },
  example: { email: 'info@example.com', password: 'Str0ng-Secret', quota: '1024' },
  result: results.mailbox,
  errors: ['limit_reached', 'object_exists'],
  async run(ctx, input) {
    const { email } = input;
    // Hashed before the transaction: the account's row is not held while it is.
    const passwordHash = await ctx.services.crypt.hash(input.password);
    const added = await changeObjects(ctx, async (db, account, before) => {
      // Locked until the commit: the account's adds take turns on its limit.
      refuseAddress(account, before, email);
      const quota = mailboxQuota(account, input.quota);
      const limit = account.limits.email_accounts;
      if (limit !== null && before.mailboxes.length >= limit)
        throw apiError('limit_reached', { limit: 'email_accounts', value: formatLimit(limit) });
      const made: Mailbox = { email, passwordHash, quota, createdAt: ctx.services.now() };
      try {
        await insertMailbox(db, account.user, made);
      } catch (error) {
        if (uniqueViolation(error) === 'email')
          throw apiError('object_exists', { kind: 'mailbox', name: email }, 'email');
        throw error;
      }
      return made;
    });
    return { data: mailboxObject(added), info: `Mailbox ${email} created` };
  },
});
