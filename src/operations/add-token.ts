// add_token (CONTRACT §14): a named API token for the customer API, answered this once; the store
// keeps only its hash. The audit log names the token, never holds it.
import { apiError } from '../core/errors.ts';
import { uniqueViolation } from '../store/errors.ts';
import { insertToken } from '../store/holder-credentials.ts';
import { holderAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const addToken = defineOperation({
  name: 'add_token',
  summary: 'Make a named API token for the customer API; the token is shown in this answer only.',
  changesState: true,
  // The token is in the answer alone: never kept for an Idempotency-Key's replay.
  secretAnswer: true,
  audiences: ['holder'],
  event: 'token.added',
  params: { name: required(kinds.objectName, 'A name for the token, to tell it from the others') },
  example: { name: 'deploy script' },
  result: results.newToken,
  errors: ['object_exists'],
  async run(ctx, input) {
    const at = ctx.services.now();
    const made = await ctx.db.transaction().execute(async (db) => {
      const account = await holderAccount(db, ctx.principal);
      try {
        const token = await insertToken(db, account.user, input.name, at);
        await ctx.recordSuccess(db);
        return { user: account.user, token };
      } catch (error) {
        if (uniqueViolation(error))
          throw apiError('object_exists', { kind: 'API token', name: input.name }, 'name');
        throw error;
      }
    });
    return {
      data: { name: input.name, token: made.token, created: at.toISOString() },
      info: `API token ${input.name} made for ${made.user}`,
    };
  },
});
