import { apiError } from '../core/errors.ts';
import { type Account, accountsOnPackage, LIMIT_NAMES, saveAccount } from '../store/accounts.ts';
import { objectsOf } from '../store/objects.ts';
import { findPackage, savePackage } from '../store/packages.ts';
import { changeState } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { packageFields } from './package-params.ts';
import { packageObject } from './record.ts';
import { results } from './results.ts';

export const editPackage = defineOperation({
  name: 'editpkg',
  summary: 'Change a package (administrator only); every account on it takes the values given.',
  changesState: true,
  audiences: ['admin'],
  params: { name: required(kinds.packageName, 'Package name'), ...packageFields },
  example: { name: 'gold', quota: '20480' },
  result: results.editedPackage,
  errors: ['package_not_found'],
  async run(ctx, input) {
    const result = await changeState(ctx, async (db, system) => {
      const pkg = await findPackage(db, input.name);
      if (!pkg) throw apiError('package_not_found', { name: input.name }, 'name');
      const given = LIMIT_NAMES.filter((name) => input[name] !== undefined);
      for (const name of given) pkg.limits[name] = input[name] ?? null;
      pkg.feature = input.feature ?? pkg.feature;
      pkg.ipv4 = input.ipv4 ?? pkg.ipv4;
      pkg.ipv6 = input.ipv6 ?? pkg.ipv6;
      pkg.shell = input.shell ?? pkg.shell;
      await savePackage(db, pkg);

      const accounts = await accountsOnPackage(db, pkg.name, { lock: true });
      for (const before of accounts) {
        const after: Account = { ...before, limits: { ...before.limits } };
        for (const name of given) after.limits[name] = pkg.limits[name];
        if (input.feature !== undefined) after.feature = pkg.feature;
        if (input.shell !== undefined) after.shellEnabled = pkg.shell;
        await saveAccount(db, after);
        await system({ kind: 'limits', before, account: after, objects: await objectsOf(db, after.user) });
      }
      return { package: packageObject(pkg), accounts_updated: accounts.length };
    });
    return {
      data: result,
      info: `Package ${input.name} changed; ${result.accounts_updated} account(s) updated`,
    };
  },
});
