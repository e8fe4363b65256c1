import { defineOperation } from './operation.ts';

export const testConnection = defineOperation({
  name: 'test_connection',
  summary: 'Test the connection and the credentials.',
  changesState: false,
  adminOnly: false,
  params: {},
  example: {},
  async run() {
    return { data: { test: 'Connection successful' }, info: 'Connection successful' };
  },
});
