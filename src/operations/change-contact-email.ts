import { saveAccount } from '../store/accounts.ts';
import { changeState, targetAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const changeContactEmail = defineOperation({
  name: 'changecontactemail',
  summary: "Change an account's contact e-mail address.",
  changesState: true,
  audiences: ['admin', 'reseller'],
  params: {
    user: required(kinds.user, 'Account user name'),
    email: required(kinds.email, 'New contact e-mail address'),
  },
  example: { user: 'alice', email: 'billing@example.com' },
  result: results.message,
  errors: ['account_not_found'],
  async run(ctx, input) {
    const account = await changeState(ctx, async (db) => {
      const account = await targetAccount(db, ctx.principal, input.user);
      account.contactEmail = input.email;
      await saveAccount(db, account);
      return account;
    });
    const message = `User contact email changed for ${account.user} => ${account.contactEmail}`;
    return { data: message, info: message };
  },
});
