// list_tokens (CONTRACT §14): the holder's API tokens by name, when made and last used; never the
// tokens themselves, which are kept nowhere.
import { tokensOf } from '../store/holder-credentials.ts';
import { holderAccount } from './common.ts';
import { defineOperation } from './operation.ts';
import { results, tokenView } from './results.ts';

export const listTokens = defineOperation({
  name: 'list_tokens',
  summary: "The holder's API tokens: name, when made, when last used.",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.tokens,
  errors: [],
  async run(ctx) {
    const account = await holderAccount(ctx.db, ctx.principal);
    const tokens = await tokensOf(ctx.db, account.user);
    return { data: tokens.map(tokenView), info: `${tokens.length} API tokens of ${account.user}` };
  },
});
