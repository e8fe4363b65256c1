import { countAccounts } from '../store/accounts.ts';
import { defineOperation } from './operation.ts';
import { scopeOf } from './principal.ts';
import { results } from './results.ts';

export const resellerCount = defineOperation({
  name: 'get_current_reseller_count',
  summary: 'How many reseller accounts there are (under a reseller: among those it owns).',
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.count('reseller'),
  errors: [],
  async run(ctx) {
    const reseller = await countAccounts(ctx.db, scopeOf(ctx.principal), true);
    return { data: { reseller }, info: `${reseller} reseller account(s)` };
  },
});
