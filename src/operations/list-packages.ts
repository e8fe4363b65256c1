import { listPackages as listAll } from '../store/packages.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const listPackages = defineOperation({
  name: 'listpackages',
  summary: 'The package names, sorted, comma-separated.',
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.packageNames,
  errors: [],
  async run(ctx) {
    const names = (await listAll(ctx.db)).map((pkg) => pkg.name);
    return { data: { packages: names.join(',') }, info: `${names.length} package(s)` };
  },
});
