import { apiError } from '../core/errors.ts';
import { saveAccount, transferOwnedAccounts } from '../store/accounts.ts';
import { changeState, refuseOwnAccount, requireAlpha, targetAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const terminateReseller = defineOperation({
  name: 'terminatereseller',
  summary:
    'Remove reseller status. Its accounts pass to its own owner (if it owned itself, to the owner it had before).',
  changesState: true,
  audiences: ['admin', 'reseller'],
  event: 'reseller.terminated',
  params: { user: required(kinds.user, 'Account user name') },
  example: { user: 'bob' },
  result: results.message,
  errors: ['account_not_found', 'not_reseller'],
  async run(ctx, input) {
    const { principal } = ctx;
    requireAlpha(principal, 'terminate resellers');
    refuseOwnAccount(principal, input.user, 'terminate the reseller privileges of');
    await changeState(ctx, async (db) => {
      const account = await targetAccount(db, principal, input.user);
      if (!account.reseller) throw apiError('not_reseller', { user: account.user }, 'user');
      const heir = account.reseller.selfown ? (account.reseller.previousOwner ?? 'root') : account.owner;
      await transferOwnedAccounts(db, account.user, heir);
      await saveAccount(db, { ...account, owner: heir, reseller: null });
    });
    const message = `Reseller privileges removed from ${input.user}`;
    return { data: message, info: message };
  },
});
