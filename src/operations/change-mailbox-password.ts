// change_mailbox_password (CONTRACT §14): a mailbox's own password (never the account's). Its IMAP
// and submission logins take it at once; the store keeps its hash alone.
import { updateMailbox } from '../store/mailboxes.ts';
import { changeObjects } from './common.ts';
import { findMailbox, mailboxObject } from './mail-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const changeMailboxPassword = defineOperation({
  name: 'change_mailbox_password',
  summary: "Change a mailbox's password.",
  changesState: true,
  audiences: ['holder'],
  event: 'mailbox.password_changed',
  params: {
    email: required(kinds.mailAddress, "The mailbox's address"),
    password: required(kinds.password, 'Its new password'),
  },
  example: { email: 'info@example.com', password: 'N3w-Str0ng-Secret' },
  result: results.mailbox,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const { email } = input;
    const passwordHash = await ctx.services.crypt.hash(input.password);
    const changed = await changeObjects(ctx, async (db, account, before) => {
      const found = findMailbox(before, email);
      await updateMailbox(db, account.user, email, { passwordHash });
      return found;
    });
    return { data: mailboxObject(changed), info: `Password of ${email} changed` };
  },
});
