import { countAccounts } from '../store/accounts.ts';
import { scopeOf } from './common.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const usersCount = defineOperation({
  name: 'get_current_users_count',
  summary: 'How many accounts there are (under a reseller: how many it owns).',
  changesState: false,
  adminOnly: false,
  params: {},
  example: {},
  result: results.count('users'),
  errors: [],
  async run(ctx) {
    const users = await countAccounts(ctx.db, scopeOf(ctx.caller));
    return { data: { users }, info: `${users} account(s)` };
  },
});
