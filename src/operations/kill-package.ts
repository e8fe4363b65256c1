import { apiError, invalid } from '../core/errors.ts';
import { accountsOnPackage } from '../store/accounts.ts';
import { deletePackage, findPackage } from '../store/packages.ts';
import { changeState } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const DEFAULT_PACKAGE = 'default';

export const killPackage = defineOperation({
  name: 'killpkg',
  summary: 'Delete a package no account uses (administrator only). The `default` package stays.',
  changesState: true,
  audiences: ['admin'],
  params: { name: required(kinds.packageName, 'Package name') },
  example: { name: 'gold' },
  result: results.message,
  errors: ['package_not_found', 'package_in_use'],
  async run(ctx, input) {
    await changeState(ctx, async (db) => {
      if (!(await findPackage(db, input.name)))
        throw apiError('package_not_found', { name: input.name }, 'name');
      if (input.name === DEFAULT_PACKAGE) throw invalid('name', 'the default package cannot be deleted');
      const users = await accountsOnPackage(db, input.name);
      if (users.length > 0)
        throw apiError('package_in_use', { name: input.name, count: users.length }, 'name');
      await deletePackage(db, input.name);
    });
    const message = `Package deleted ${input.name}`;
    return { data: message, info: message };
  },
});
