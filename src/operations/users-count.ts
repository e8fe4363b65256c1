import { countAccounts } from '../store/accounts.ts';
import { defineOperation } from './operation.ts';
import { scopeOf } from './principal.ts';
import { results } from './results.ts';

export const usersCount = defineOperation({
  name: 'get_current_users_count',
  summary: 'How many accounts there are (under a reseller: how many it owns).',
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.count('users'),
  errors: [],
  async run(ctx) {
    const users = await countAccounts(ctx.db, scopeOf(ctx.principal));
    return { data: { users }, info: `${users} account(s)` };
  },
});
