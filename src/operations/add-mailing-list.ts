// add_mailing_list (CONTRACT §14): a mailing list run by mlmmj at an address of one of the
// account's mail domains, with an owner (one address anywhere, who gets mail to
// `<list>+owner@<domain>`). A post to the list reaches its members; anyone may subscribe by mail to
// `<list>+subscribe@<domain>` and confirm, and leave by `<list>+unsubscribe@<domain>`. The account's
// maillist limit is taken inside the transaction that adds it (the account's row is locked), so
// that concurrent adds never pass it. An address is one thing only: a mailbox, a forwarder or a list.
import { apiError } from '../core/errors.ts';
import { formatLimit } from '../core/values.ts';
import { uniqueViolation } from '../store/errors.ts';
import { insertMailingList, type MailingList } from '../store/mailing-lists.ts';
import { changeObjects } from './common.ts';
import { mailingListObject, refuseAddress } from './mail-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const addMailingList = defineOperation({
  name: 'add_mailing_list',
  summary: 'Create a mailing list at an address of one of the account’s domains.',
  changesState: true,
  audiences: ['holder'],
  event: 'mailing_list.added',
  params: {
    email: required(kinds.mailAddress, "The list's address, in the account's main, addon or parked domain"),
    owner: required(
      kinds.listAddress,
      'Its owner: an address anywhere, which gets mail to <list>+owner@<domain>',
    ),
  },
  example: { email: 'news@example.com', owner: 'alice@example.net' },
  result: results.mailingList,
  errors: ['limit_reached', 'object_exists'],
  async run(ctx, input) {
    const { email, owner } = input;
    const added = await changeObjects(ctx, async (db, account, before) => {
      refuseAddress(account, before, email);
      const limit = account.limits.maillist;
      if (limit !== null && before.mailing_lists.length >= limit)
        throw apiError('limit_reached', { limit: 'maillist', value: formatLimit(limit) });
      const made: MailingList = {
        email,
        owner: owner.toLowerCase(),
        members: [],
        createdAt: ctx.services.now(),
      };
      try {
        await insertMailingList(db, account.user, made);
      } catch (error) {
        if (uniqueViolation(error) === 'email')
          throw apiError('object_exists', { kind: 'mailing list', name: email }, 'email');
        throw error;
      }
      return made;
    });
    return { data: mailingListObject(added), info: `Mailing list ${email} created` };
  },
});
