import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { catalogue } from '../../src/errors.ts';
import { operations } from '../../src/operations/registry.ts';
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
    for (const operation of operations.values()) {
      const path = doc.paths[operation.name === '' ? '/' : `/${operation.name}/`];
      assert.ok(path, operation.name);
      for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data', 'application/json']) {
        const properties = Object.keys(path.post.requestBody.content[type]!.schema.properties);
        for (const param of [...Object.keys(operation.params), 'apiuser', 'apiauth'])
          assert.ok(properties.includes(param), `${operation.name} ${param}`);
      }
    }
    assert.equal(Object.keys(doc.paths).length, operations.size);
  });

  it('lists every error code of the catalogue', () => {
    assert.deepEqual(
      doc.components.schemas.Error.properties.data.properties.code.enum.sort(),
      Object.keys(catalogue).sort(),
    );
  });

  it('is rendered as a readable reference page on the admin listener', async () => {
    const page = await h.admin.inject({ method: 'GET', url: '/reference' });
    assert.equal(page.statusCode, 200);
    for (const operation of operations.values())
      if (operation.name) assert.ok(page.body.includes(`/api/v1/${operation.name}/`), operation.name);
    for (const code of Object.keys(catalogue)) assert.ok(page.body.includes(`<code>${code}</code>`), code);
  });
});
