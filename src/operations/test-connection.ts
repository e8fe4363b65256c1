import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const testConnection = defineOperation({
  name: 'test_connection',
  summary: 'Test the connection and the credentials.',
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.testConnection,
  errors: [],
  async run() {
    return { data: { test: 'Connection successful' }, info: 'Connection successful' };
  },
});
