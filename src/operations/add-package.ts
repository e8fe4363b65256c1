import { apiError } from '../core/errors.ts';
import { LIMIT_NAMES, type Limits } from '../store/accounts.ts';
import { findPackage, insertPackage, type Package } from '../store/packages.ts';
import { changeState } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { packageFields } from './package-params.ts';
import { packageObject } from './record.ts';
import { results } from './results.ts';

export const addPackage = defineOperation({
  name: 'addpkg',
  summary: 'Add a hosting package (administrator only). Limits not given are `unlimited`.',
  changesState: true,
  audiences: ['admin'],
  params: { name: required(kinds.packageName, 'Package name (case-sensitive)'), ...packageFields },
  example: { name: 'gold', quota: '10240', bandwidth: '102400' },
  result: results.package,
  errors: ['package_exists'],
  async run(ctx, input) {
    const limits = {} as Limits;
    for (const name of LIMIT_NAMES) limits[name] = input[name] ?? null;
    const pkg: Package = {
      name: input.name,
      feature: input.feature ?? 'default',
      limits,
      ipv4: input.ipv4 ?? false,
      ipv6: input.ipv6 ?? false,
      shell: input.shell ?? false,
    };
    await changeState(ctx, async (db) => {
      if (await findPackage(db, pkg.name)) throw apiError('package_exists', { name: pkg.name }, 'name');
      await insertPackage(db, pkg);
    });
    return { data: packageObject(pkg), info: `Package ${pkg.name} created` };
  },
});
