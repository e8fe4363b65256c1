// Calls Berth through a client generated from its OpenAPI document (openapi-typescript types,
// openapi-fetch), as an integrator would; run by openapi-client.test.ts next to the generated
// schema.d.ts, type-checked first. Prints what it got as one JSON line.
import createClient from 'openapi-fetch';
import type { paths } from './schema.d.ts';

const [url, user, password] = process.argv.slice(2) as [string, string, string];
const berth = createClient<paths>({
  baseUrl: `${url}/api/v1`,
  headers: { 'X-API-USER': user, 'X-API-PASSWORD': password },
});

const created = await berth.POST('/createacct/', {
  body: { user: 'gena', domain: 'gena.example', email: 'gena@example.org', package: 'default', quota: 750 },
  params: { header: { 'Idempotency-Key': 'generated-client-1' } },
});
if (!created.data) throw new Error(JSON.stringify(created.error));
// The result is typed per operation: these are strings in the schema, not unknown.
const quota: string = created.data.data.quota;
const shell: 'on' | 'off' = created.data.data.shell.status;
// @ts-expect-error no such field in createacct's answer
created.data.data.no_such_field;

const listed = await berth.POST('/listaccts/', {});
const accounts = Object.keys(listed.data?.data.accounts ?? {});

const summary = await berth.POST('/accountsummary/', { body: { user: 'gena' } });
const usage: number | undefined = summary.data?.data.acct.quota_usage;

const missing = await berth.POST('/accountsummary/', { body: { user: 'ghost' } });
const code = missing.error?.data.code;

const session = await berth.POST('/create_user_session/', { body: { user: 'gena', page: 'email' } });
const expires: number | undefined = session.data?.data.expires;
const sso = /\/login\/sso\?token=/.test(session.data?.data.url ?? '') && typeof expires === 'number';

console.log(JSON.stringify({ quota, shell, accounts, usage, code, status: missing.response.status, sso }));
