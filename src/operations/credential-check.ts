// POST /api/ — checks the credentials and names the API user. The one answer without an envelope.
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const credentialCheck = defineOperation({
  name: '',
  summary: 'Check credentials: answers {"username", "auth": "API"} without an envelope.',
  changesState: false,
  adminOnly: false,
  params: {},
  example: {},
  result: results.credentialCheck,
  errors: [],
  async run(ctx) {
    return { data: { username: ctx.caller.apiUser, auth: 'API' }, info: '', bare: true };
  },
});
