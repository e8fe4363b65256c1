// remove_forwarder (CONTRACT §14): mail to the address is no longer forwarded (nor accepted).
import { apiError } from '../core/errors.ts';
import { deleteForwarder } from '../store/mailboxes.ts';
import { changeObjects } from './common.ts';
import { forwarderObject } from './mail-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeForwarder = defineOperation({
  name: 'remove_forwarder',
  summary: 'Remove a forwarder.',
  changesState: true,
  audiences: ['holder'],
  event: 'forwarder.removed',
  params: {
    email: required(kinds.mailAddress, "The forwarder's address"),
  },
  example: { email: 'sales@example.com' },
  result: results.forwarder,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const { email } = input;
    const removed = await changeObjects(ctx, async (db, account, before) => {
      const found = before.forwarders.find((f) => f.email === email);
      if (!found) throw apiError('object_not_found', { kind: 'forwarder', name: email }, 'email');
      await deleteForwarder(db, account.user, email);
      return found;
    });
    return { data: forwarderObject(removed), info: `Forwarder ${email} removed` };
  },
});
