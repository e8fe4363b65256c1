// remove_list_member (CONTRACT §14): a member the holder added leaves one of the account's mailing
// lists, and gets no more of its posts.
import { apiError } from '../core/errors.ts';
import { updateListMembers } from '../store/mailing-lists.ts';
import { changeObjects } from './common.ts';
import { findMailingList, mailingListObject } from './mail-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeListMember = defineOperation({
  name: 'remove_list_member',
  summary: 'Remove a member from a mailing list.',
  changesState: true,
  audiences: ['holder'],
  event: 'mailing_list.member_removed',
  params: {
    list: required(kinds.mailAddress, "The list's address"),
    email: required(kinds.email, "The member's address"),
  },
  example: { list: 'news@example.com', email: 'reader@example.net' },
  result: results.mailingList,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const { list } = input;
    const email = input.email.toLowerCase();
    const changed = await changeObjects(ctx, async (db, account, before) => {
      const found = findMailingList(before, list, 'list');
      if (!found.members.includes(email))
        throw apiError('object_not_found', { kind: 'list member', name: email }, 'email');
      const members = found.members.filter((m) => m !== email);
      await updateListMembers(db, account.user, list, members);
      return { ...found, members };
    });
    return { data: mailingListObject(changed), info: `${email} removed from ${list}` };
  },
});
