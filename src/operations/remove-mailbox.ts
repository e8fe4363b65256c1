// remove_mailbox (CONTRACT §14): takes a mailbox from the account, and its mail with it: its logins
// end at once, its Maildir is removed once nothing serves it any more (that alone is not undone).
import { deleteMailbox } from '../store/mailboxes.ts';
import { changeObjects } from './common.ts';
import { findMailbox, mailboxObject } from './mail-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeMailbox = defineOperation({
  name: 'remove_mailbox',
  summary: 'Remove a mailbox and the mail in it.',
  changesState: true,
  audiences: ['holder'],
  event: 'mailbox.removed',
  params: {
    email: required(kinds.mailAddress, "The mailbox's address"),
  },
  example: { email: 'info@example.com' },
  result: results.mailbox,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const { email } = input;
    const removed = await changeObjects(ctx, async (db, account, before) => {
      const found = findMailbox(before, email);
      await deleteMailbox(db, account.user, email);
      return found;
    });
    return { data: mailboxObject(removed), info: `Mailbox ${email} removed` };
  },
});
