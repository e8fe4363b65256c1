// list_mailing_lists (CONTRACT §14): every mailing list of the holder's account, by address, with
// its owner and the members the holder added.
import { mailingListsOf } from '../store/mailing-lists.ts';
import { holderAccount } from './common.ts';
import { mailingListObject } from './mail-objects.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const listMailingLists = defineOperation({
  name: 'list_mailing_lists',
  summary: "The account's mailing lists, each with its owner and the members the holder added.",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.mailingLists,
  errors: [],
  async run(ctx) {
    const account = await holderAccount(ctx.db, ctx.principal);
    const lists = await mailingListsOf(ctx.db, account.user);
    return {
      data: lists.map(mailingListObject),
      info: `${lists.length} mailing list(s) of ${account.user}`,
    };
  },
});
