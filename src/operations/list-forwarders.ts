// list_forwarders (CONTRACT §14): every forwarder of the holder's account, by address.
import { forwardersOf } from '../store/mailboxes.ts';
import { holderAccount } from './common.ts';
import { forwarderObject } from './mail-objects.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const listForwarders = defineOperation({
  name: 'list_forwarders',
  summary: "The account's forwarders: addresses whose mail goes on to other addresses.",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.forwarders,
  errors: [],
  async run(ctx) {
    const account = await holderAccount(ctx.db, ctx.principal);
    const forwarders = await forwardersOf(ctx.db, account.user);
    return {
      data: forwarders.map(forwarderObject),
      info: `${forwarders.length} forwarder(s) of ${account.user}`,
    };
  },
});
