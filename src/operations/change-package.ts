import { apiError } from '../core/errors.ts';
import { saveAccount } from '../store/accounts.ts';
import { objectsOf } from '../store/objects.ts';
import { findPackage } from '../store/packages.ts';
import { changeState, enforceLimitsOfChange, targetAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const changePackage = defineOperation({
  name: 'changepackage',
  summary: "Move an account to another package: it takes the package's limits, feature list and shell.",
  changesState: true,
  audiences: ['admin', 'reseller'],
  event: 'account.package_changed',
  params: {
    user: required(kinds.user, 'Account user name'),
    package: required(kinds.packageName, 'Package name'),
  },
  example: { user: 'alice', package: 'gold' },
  result: results.message,
  errors: ['account_not_found', 'package_not_found', 'reseller_limit'],
  async run(ctx, input) {
    const { principal } = ctx;
    await changeState(ctx, async (db, system) => {
      const before = await targetAccount(db, principal, input.user);
      const pkg = await findPackage(db, input.package);
      if (!pkg) throw apiError('package_not_found', { name: input.package }, 'package');
      const after = {
        ...before,
        package: pkg.name,
        feature: pkg.feature,
        limits: { ...pkg.limits },
        shellEnabled: pkg.shell,
      };
      await enforceLimitsOfChange(db, principal, after);
      await saveAccount(db, after);
      await system({ kind: 'limits', before, account: after, objects: await objectsOf(db, after.user) });
    });
    const message = `User hosting package changed for ${input.user}`;
    return { data: message, info: message };
  },
});
