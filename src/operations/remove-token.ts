// remove_token (CONTRACT §14): the named API token stops working at once.
import { apiError } from '../core/errors.ts';
import { deleteToken } from '../store/holder-credentials.ts';
import { holderAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeToken = defineOperation({
  name: 'remove_token',
  summary: 'Remove an API token: calls with it are refused from now on.',
  changesState: true,
  audiences: ['holder'],
  event: 'token.removed',
  params: { name: required(kinds.objectName, 'The name of the token') },
  example: { name: 'deploy script' },
  result: results.message,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const user = await ctx.db.transaction().execute(async (db) => {
      const account = await holderAccount(db, ctx.principal);
      if (!(await deleteToken(db, account.user, input.name)))
        throw apiError('object_not_found', { kind: 'API token', name: input.name }, 'name');
      await ctx.recordSuccess(db);
      return account.user;
    });
    const message = `API token ${input.name} of ${user} removed`;
    return { data: message, info: message };
  },
});
