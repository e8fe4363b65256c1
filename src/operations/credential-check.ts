// POST /api/ — checks the credentials and names the API user. The one answer without an envelope.
import { defineOperation } from './operation.ts';
import { actorName } from './principal.ts';
import { results } from './results.ts';

export const credentialCheck = defineOperation({
  name: '',
  summary: 'Check credentials: answers {"username", "auth": "API"} without an envelope.',
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.credentialCheck,
  errors: [],
  async run(ctx) {
    return { data: { username: actorName(ctx.principal), auth: 'API' }, info: '', bare: true };
  },
});
