// list_mailboxes (CONTRACT §14): every mailbox of the holder's account, by address, each as
// add_mailbox answers it (never its password).
import { mailboxesOf } from '../store/mailboxes.ts';
import { holderAccount } from './common.ts';
import { mailboxObject } from './mail-objects.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const listMailboxes = defineOperation({
  name: 'list_mailboxes',
  summary: "The account's mailboxes (the account's own address is not one of them).",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.mailboxes,
  errors: [],
  async run(ctx) {
    const account = await holderAccount(ctx.db, ctx.principal);
    const mailboxes = await mailboxesOf(ctx.db, account.user);
    return { data: mailboxes.map(mailboxObject), info: `${mailboxes.length} mailbox(es) of ${account.user}` };
  },
});
