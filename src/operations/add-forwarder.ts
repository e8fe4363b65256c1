// add_forwarder (CONTRACT §14): mail to an address of one of the account's mail domains goes on to
// one to 20 addresses anywhere. No limit bounds forwarders; the address is neither a mailbox nor
// the account's own, and a forwarder never sends to itself.
import { apiError, invalid } from '../core/errors.ts';
import { uniqueViolation } from '../store/errors.ts';
import { type Forwarder, insertForwarder } from '../store/mailboxes.ts';
import { changeObjects } from './common.ts';
import { forwarderObject, refuseAddress } from './mail-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const addForwarder = defineOperation({
  name: 'add_forwarder',
  summary: 'Forward mail to an address of one of the account’s domains to other addresses.',
  changesState: true,
  audiences: ['holder'],
  event: 'forwarder.added',
  params: {
    email: required(
      kinds.mailAddress,
      "The address forwarded, in the account's main, addon or parked domain",
    ),
    to: required(kinds.addressList, 'Where its mail goes: up to 20 addresses anywhere, comma-separated'),
  },
  example: { email: 'sales@example.com', to: 'alice@example.net, bob@example.org' },
  result: results.forwarder,
  errors: ['object_exists'],
  async run(ctx, input) {
    const { email, to } = input;
    if (to.includes(email)) throw invalid('to', `${email} would forward to itself`);
    const added = await changeObjects(ctx, async (db, account, before) => {
      refuseAddress(account, before, email);
      const made: Forwarder = { email, to, createdAt: ctx.services.now() };
      try {
        await insertForwarder(db, account.user, made);
      } catch (error) {
        if (uniqueViolation(error) === 'email')
          throw apiError('object_exists', { kind: 'forwarder', name: email }, 'email');
        throw error;
      }
      return made;
    });
    return { data: forwarderObject(added), info: `Forwarder ${email} added` };
  },
});
