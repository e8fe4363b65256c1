import { createRequire } from 'node:module';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

export const BERTH_VERSION = version;

export const versionOperation = defineOperation({
  name: 'version',
  summary: "Berth's release label and version.",
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.version,
  errors: [],
  async run() {
    return { data: { version: `Berth ${version}`, version_code: version }, info: `Berth ${version}` };
  },
});
