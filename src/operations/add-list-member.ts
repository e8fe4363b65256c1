// add_list_member (CONTRACT §14): an address anywhere becomes a member of one of the account's
// mailing lists at once (the holder adds it: no confirmation by mail is asked), and gets every post
// from then on. A list has at most MAX_LIST_MEMBERS members the holder added.
import { apiError, invalid } from '../core/errors.ts';
import { updateListMembers } from '../store/mailing-lists.ts';
import { changeObjects } from './common.ts';
import { findMailingList, mailingListObject } from './mail-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

/** The most members the holder adds to one list (more subscribe by mail). */
export const MAX_LIST_MEMBERS = 5000;

export const addListMember = defineOperation({
  name: 'add_list_member',
  summary: 'Add a member to a mailing list.',
  changesState: true,
  audiences: ['holder'],
  event: 'mailing_list.member_added',
  params: {
    list: required(kinds.mailAddress, "The list's address"),
    email: required(kinds.listAddress, "The member's address, anywhere"),
  },
  example: { list: 'news@example.com', email: 'reader@example.net' },
  result: results.mailingList,
  errors: ['object_not_found', 'object_exists'],
  async run(ctx, input) {
    const { list } = input;
    const email = input.email.toLowerCase();
    if (email === list) throw invalid('email', `${list} is the list itself`);
    const changed = await changeObjects(ctx, async (db, account, before) => {
      const found = findMailingList(before, list, 'list');
      if (found.members.includes(email))
        throw apiError('object_exists', { kind: 'list member', name: email }, 'email');
      if (found.members.length >= MAX_LIST_MEMBERS)
        throw invalid('email', `a list has at most ${MAX_LIST_MEMBERS} members added this way`);
      const members = [...found.members, email].sort();
      await updateListMembers(db, account.user, list, members);
      return { ...found, members };
    });
    return { data: mailingListObject(changed), info: `${email} added to ${list}` };
  },
});
