import { randomUUID } from 'node:crypto';
import { type Account, saveAccount } from '../store/accounts.ts';
import { changeState, forbidden, refuseOwnAccount, requireAlpha, targetAccount } from './common.ts';
import { defineOperation, kinds, optional, required } from './operation.ts';
import { resellerOf } from './principal.ts';
import { results } from './results.ts';

export const setupReseller = defineOperation({
  name: 'setupreseller',
  summary: 'Make an account a reseller, or update the limits of one that is.',
  changesState: true,
  audiences: ['admin', 'reseller'],
  event: 'reseller.setup',
  params: {
    user: required(kinds.user, 'Account user name'),
    selfown: optional(kinds.switch, 'The reseller owns its own account (administrator only)'),
    reseller_limt: optional(kinds.limit, 'Number of accounts it may create; default `unlimited`'),
    reseller_bandwidth: optional(
      kinds.limit,
      'Combined bandwidth of its accounts in MB; default `unlimited`',
    ),
    reseller_quota: optional(kinds.limit, 'Combined disk quota of its accounts in MB; default `unlimited`'),
    alpha: optional(kinds.switch, 'May create and manage resellers itself (administrator only)'),
  },
  example: { user: 'bob', reseller_limt: '50', reseller_quota: '102400' },
  result: results.message,
  errors: ['account_not_found'],
  async run(ctx, input) {
    const { principal } = ctx;
    const reseller = resellerOf(principal);
    requireAlpha(principal, 'set up resellers');
    refuseOwnAccount(principal, input.user, 'change the reseller privileges of');
    if (reseller && input.alpha !== undefined) throw forbidden('Only the administrator may grant alpha.');
    if (reseller && input.selfown === true) {
      throw forbidden('Only the administrator may let a reseller own its own account.');
    }
    await changeState(ctx, async (db) => {
      const account = await targetAccount(db, principal, input.user);
      const current = account.reseller ?? {
        id: randomUUID(),
        selfown: false,
        alpha: false,
        limit: null,
        bandwidth: null,
        quota: null,
        previousOwner: null,
      };
      const next: Account = {
        ...account,
        reseller: {
          ...current,
          alpha: input.alpha ?? current.alpha,
          limit: input.reseller_limt !== undefined ? input.reseller_limt : current.limit,
          bandwidth: input.reseller_bandwidth !== undefined ? input.reseller_bandwidth : current.bandwidth,
          quota: input.reseller_quota !== undefined ? input.reseller_quota : current.quota,
        },
      };
      if (input.selfown === true && !current.selfown) {
        next.reseller = { ...next.reseller!, selfown: true, previousOwner: account.owner };
        next.owner = account.user;
      } else if (input.selfown === false && current.selfown) {
        next.owner = current.previousOwner ?? 'root';
        next.reseller = { ...next.reseller!, selfown: false, previousOwner: null };
      }
      await saveAccount(db, next);
    });
    const message = `User account converted to reseller ${input.user}`;
    return { data: message, info: message };
  },
});
