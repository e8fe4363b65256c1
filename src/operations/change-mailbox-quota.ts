// change_mailbox_quota (CONTRACT §14): a mailbox's quota in MB, which Dovecot enforces; at most the
// account's mailquota when it has one. Mail already there stays, over the quota or not.
import { updateMailbox } from '../store/mailboxes.ts';
import { changeObjects } from './common.ts';
import { findMailbox, mailboxObject, mailboxQuota } from './mail-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const changeMailboxQuota = defineOperation({
  name: 'change_mailbox_quota',
  summary: "Change a mailbox's quota.",
  changesState: true,
  audiences: ['holder'],
  event: 'mailbox.quota_changed',
  params: {
    email: required(kinds.mailAddress, "The mailbox's address"),
    quota: required(kinds.limit, "Its quota in MB, or `unlimited`; at most the account's mailquota"),
  },
  example: { email: 'info@example.com', quota: '2048' },
  result: results.mailbox,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const { email } = input;
    const changed = await changeObjects(ctx, async (db, account, before) => {
      const found = findMailbox(before, email);
      const quota = mailboxQuota(account, input.quota);
      await updateMailbox(db, account.user, email, { quota });
      return { ...found, quota };
    });
    return {
      data: mailboxObject(changed),
      info: `Quota of ${email} is now ${changed.quota ?? 'unlimited'} MB`,
    };
  },
});
