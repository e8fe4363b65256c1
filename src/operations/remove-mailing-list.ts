// remove_mailing_list (CONTRACT §14): the list goes with its members, those who subscribed by mail
// too, and whatever mlmmj kept for it; mail to its address is refused from then on.
import { deleteMailingList } from '../store/mailing-lists.ts';
import { changeObjects } from './common.ts';
import { findMailingList, mailingListObject } from './mail-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeMailingList = defineOperation({
  name: 'remove_mailing_list',
  summary: 'Remove a mailing list, its members and everything kept for it.',
  changesState: true,
  audiences: ['holder'],
  event: 'mailing_list.removed',
  params: {
    email: required(kinds.mailAddress, "The list's address"),
  },
  example: { email: 'news@example.com' },
  result: results.mailingList,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const { email } = input;
    const removed = await changeObjects(ctx, async (db, account, before) => {
      const found = findMailingList(before, email);
      await deleteMailingList(db, account.user, email);
      return found;
    });
    return { data: mailingListObject(removed), info: `Mailing list ${email} removed` };
  },
});
