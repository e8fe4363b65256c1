import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { catalogue } from '../../src/core/errors.ts';
import { apiOperations, customerOperations } from '../../src/operations/registry.ts';
import { type Harness, setup } from '../helpers.ts';

type Document = {
  openapi: string;
  paths: Record<
    string,
    {
      post: {
        operationId: string;
        requestBody: { content: Record<string, { schema: { properties: object } }> };
      };
    }
  >;
  components: { schemas: { Error: { properties: { data: { properties: { code: { enum: string[] } } } } } } };
};

describe('the OpenAPI description', () => {
  let h: Harness;
  let doc: Document;
  before(async () => {
    h = await setup();
    const reply = await h.admin.inject({ method: 'GET', url: '/api/openapi.json' });
    assert.equal(reply.statusCode, 200);
    doc = JSON.parse(reply.body) as Document;
  });
  after(() => h.close());

  it('is OpenAPI 3.1, served on both listeners without credentials', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const reseller = await h.reseller.inject({ method: 'GET', url: '/api/openapi.json' });
    assert.deepEqual(JSON.parse(reseller.body), doc);
  });

  it('names every operation of the registry with every one of its parameters', () => {
    for (const operation of apiOperations.operations.values()) {
      const path = doc.paths[operation.name === '' ? '/' : `/${operation.name}/`];
      assert.ok(path, operation.name);
      for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data', 'application/json']) {
        const properties = Object.keys(path.post.requestBody.content[type]!.schema.properties);
        for (const param of [...Object.keys(operation.params), 'apiuser', 'apiauth'])
          assert.ok(properties.includes(param), `${operation.name} ${param}`);
      }
    }
    // And each of the holders' operations, for a holder at /account/<op>/, with `user`.
    for (const operation of customerOperations.operations.values()) {
      const path = doc.paths[`/account/${operation.name}/`];
      assert.ok(path, operation.name);
      const properties = Object.keys(path.post.requestBody.content['application/json']!.schema.properties);
      for (const param of [...Object.keys(operation.params), 'user']) assert.ok(properties.includes(param));
    }
    assert.equal(
      Object.keys(doc.paths).length,
      apiOperations.operations.size + customerOperations.operations.size,
    );
  });

  it('describes the holders’ own operations on the customer listener, with their credentials', async () => {
    const served = JSON.parse((await h.customer.inject({ method: 'GET', url: '/api/openapi.json' })).body);
    assert.deepEqual(
      Object.keys(served.paths).sort(),
      [...customerOperations.operations.keys()].map((n) => `/${n}/`).sort(),
    );
    assert.deepEqual(Object.keys(served.components.securitySchemes).sort(), ['password', 'token']);
    const body = served.paths['/account_info/'].post.requestBody.content['application/json'].schema;
    assert.ok(!('apiuser' in body.properties) && !('user' in body.properties));
  });

  it('lists every error code of the catalogue', () => {
    assert.deepEqual(
      doc.components.schemas.Error.properties.data.properties.code.enum.sort(),
      Object.keys(catalogue).sort(),
    );
  });

  it('gives each operation its data schema and the error codes it can answer with', () => {
    const raw = doc as unknown as {
      paths: Record<
        string,
        { post: { responses: Record<string, { description: string; content: object }> } }
      >;
    };
    const summary = raw.paths['/accountsummary/']!.post.responses;
    assert.deepEqual(Object.keys(summary).sort(), ['200', '400', '403', '413', '415', '429', '500']);
    assert.match(
      JSON.stringify(summary['200']),
      /"data":\{"type":"object","properties":\{"acct":\{"\$ref":"#\/components\/schemas\/SummaryAccount"/,
    );
    assert.match(summary['400']!.description, /invalid_parameter, account_not_found/);
    assert.doesNotMatch(summary['400']!.description, /package_in_use/);
    const version = raw.paths['/version/']!.post.responses;
    assert.equal(version['400']!.description, 'Refused or failed: invalid_parameter (docs/errors.md).');
    assert.match(JSON.stringify(raw.paths['/createacct/']!.post.responses['500']), /provisioning_failed/);
  });

  it('describes the credentials as they are sent: X-API-* headers, or apiuser and apiauth fields', () => {
    const raw = doc as unknown as {
      components: { securitySchemes: Record<string, { in: string; name: string }> };
      paths: Record<string, { post: { security: object[] } }>;
    };
    assert.deepEqual(
      Object.values(raw.components.securitySchemes).map((scheme) => `${scheme.in} ${scheme.name}`),
      ['header X-API-USER', 'header X-API-PASSWORD'],
    );
    assert.deepEqual(raw.paths['/listaccts/']!.post.security, [{ apiUser: [], apiPassword: [] }, {}]);
  });

  it('is rendered as a readable reference page on the admin listener', async () => {
    const page = await h.admin.inject({ method: 'GET', url: '/reference' });
    assert.equal(page.statusCode, 200);
    for (const operation of apiOperations.operations.values())
      if (operation.name) assert.ok(page.body.includes(`/api/v1/${operation.name}/`), operation.name);
    for (const code of Object.keys(catalogue)) assert.ok(page.body.includes(`<code>${code}</code>`), code);
  });
});
