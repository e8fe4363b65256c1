// The holder's panel page by page (CONTRACT §14): Home's meters, Domains (each kind added, the
// limit explained beside Type, a refused form in the labels' words), Security (password, tokens
// shown once), the account's language and theme, and the panel's page for an unknown address.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listAudit } from '../../src/store/audit.ts';
import { createAccount } from '../helpers.ts';
import {
  csrfOf,
  get,
  HOLDER_PASSWORD,
  holderSession,
  type PanelHarness,
  panelHarness,
  postForm,
} from './pages.ts';

describe('the panel’s pages', () => {
  let h: PanelHarness;
  let alice: { cookie: string; csrf: string };
  const addDomain = (fields: Record<string, string>) =>
    postForm(h, '/domains', { _csrf: alice.csrf, docroot: '', ...fields }, alice.cookie);

  before(async () => {
    h = await panelHarness();
    await createAccount(h, 'alice', {
      password: HOLDER_PASSWORD,
      addondomains: '1',
      parkeddomains: '1',
      subdomains: '1',
    });
    alice = await holderSession(h, 'alice');
  });
  after(async () => h.close());

  it('shows on Home every limit as a meter with its name, used against allowed', async () => {
    const home = await get(h, '/', alice.cookie);
    assert.equal(home.status, 200);
    for (const name of ['Addon domains: 0 of 1', 'Parked domains: 0 of 1', 'Subdomains: 0 of 1']) {
      assert.match(home.body, new RegExp(`<meter [^>]*aria-label="${name}"`));
    }
    assert.match(home.body, /aria-label="Email accounts: 0, unlimited"/);
    assert.match(home.body, /aria-label="Disk space: 0, unlimited"/);
    // Every page of CONTRACT §14 in the navigation, in its order.
    const links = [...home.body.matchAll(/<nav aria-label="[^"]*">([\s\S]*?)<\/nav>/g)].flatMap((nav) =>
      [...nav[1]!.matchAll(/href="([^"]+)"/g)].map((link) => link[1]),
    );
    assert.deepEqual(links, [
      '/',
      '/domains',
      '/email',
      '/databases',
      '/ftp',
      '/cron',
      '/backups',
      '/security',
    ]);
    assert.match(home.body, /aria-label="Cron jobs: 0 of 20"/);
  });

  it('adds an addon domain, a parked domain and a subdomain, each through add_domain as the holder', async () => {
    const shown = await get(h, '/domains', alice.cookie);
    assert.match(shown.body, /<label for="domain">Domain<\/label>/);
    assert.match(shown.body, /<label for="type">Type<\/label>/);
    assert.match(shown.body, /<option value="addon" selected>Addon domain<\/option>/);
    assert.match(shown.body, /<option value="parked">Parked domain<\/option>/);
    assert.match(shown.body, /<option value="subdomain">Subdomain<\/option>/);
    assert.match(shown.body, /<label for="docroot">Document root<\/label>/);
    assert.match(shown.body, /<button type="submit">Add domain<\/button>/);

    const added = await addDomain({ domain: 'Shop.Example', type: 'addon', docroot: 'sites/shop' });
    assert.equal(added.status, 303, added.body);
    const list = await get(
      h,
      '/domains',
      `${alice.cookie}; ${added.headers['set-cookie']}`.replace(/;\s*Path=.*$/, ''),
    );
    assert.match(list.body, /Domain shop\.example added\./);
    assert.match(list.body, /<td data-label="Document root"><code>sites\/shop<\/code><\/td>/);
    assert.equal((await addDomain({ domain: 'parked.example', type: 'parked' })).status, 303);
    assert.equal((await addDomain({ domain: 'blog.alice.example.com', type: 'subdomain' })).status, 303);
    const domains = await get(h, '/domains', alice.cookie);
    for (const [domain, type] of [
      ['shop.example', 'Addon domain'],
      ['parked.example', 'Parked domain'],
      ['blog.alice.example.com', 'Subdomain'],
      ['alice.example.com', 'Main domain'],
    ]) {
      assert.match(
        domains.body,
        new RegExp(
          `<td data-label="Domain">${domain!.replaceAll('.', '\\.')}</td>\\s*<td data-label="Type">${type}</td>`,
        ),
      );
    }
    const entries = await listAudit(h.services.store.db, { limit: 3 });
    assert.deepEqual(
      entries.map((e) => [e.operation, e.api_user, e.principal, e.via, e.status]),
      Array(3).fill(['add_domain', 'customer:alice', 'holder', 'panel', 200]),
    );
  });

  it('explains a used-up limit beside Type, keeping what was typed', async () => {
    const page = await addDomain({ domain: 'second.example', type: 'addon' });
    assert.equal(page.status, 400);
    assert.match(page.body, /<title>Error: Domains · Berth<\/title>/);
    assert.match(
      page.body,
      /<select id="type" name="type" aria-describedby="type-error" aria-invalid="true">/,
    );
    assert.match(
      page.body,
      /<p class="field-error" id="type-error">Your plan allows 1 of this type \(Addon domain\) and all are in use\. Remove one, or ask your hosting provider for more\.<\/p>/,
    );
    assert.match(page.body, /<a href="#type">Your plan allows 1/, 'the summary links to the field');
    assert.match(page.body, /id="domain" name="domain"[^>]*value="second\.example"/);
    assert.match(page.body, /Addon domain: 1 of 1 in use\./);
  });

  it('shows every refusal of a form at once, in the words of its labels', async () => {
    const page = await addDomain({ domain: 'not a domain', type: 'castle' });
    assert.equal(page.status, 400);
    assert.match(page.body, /id="domain-error">Domain: /);
    assert.match(page.body, /id="type-error">Type: /);
    const taken = await addDomain({ domain: 'shop.example', type: 'addon' });
    assert.match(taken.body, /id="domain-error">Domain: this already exists\.<\/p>/);
  });

  it('removes a domain, and offers no removal of the main domain', async () => {
    const removed = await postForm(
      h,
      '/domains/remove',
      { _csrf: alice.csrf, domain: 'parked.example' },
      alice.cookie,
    );
    assert.equal(removed.status, 303);
    const page = await get(h, '/domains', alice.cookie);
    assert.doesNotMatch(page.body, /parked\.example/);
    assert.doesNotMatch(page.body, /name="domain" value="alice\.example\.com"/);
    const main = await postForm(
      h,
      '/domains/remove',
      { _csrf: alice.csrf, domain: 'alice.example.com' },
      alice.cookie,
    );
    assert.equal(main.status, 400);
    assert.match(main.body, /main domain/);
  });

  it('makes an API token, shows it once, lists it by name and removes it', async () => {
    const made = await postForm(h, '/security/tokens', { _csrf: alice.csrf, name: 'deploy' }, alice.cookie);
    assert.equal(made.status, 200);
    const token = /id="new-token" type="text" value="([^"]+)"/.exec(made.body)?.[1];
    assert.ok(token && token.length >= 32, made.body);
    const api = await h.customer.inject({
      method: 'POST',
      url: '/api/account_info/',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(api.statusCode, 200, 'the token works on the customer API');
    const later = await get(h, '/security', alice.cookie);
    assert.match(later.body, /<td data-label="Name">deploy<\/td>/);
    assert.doesNotMatch(later.body, new RegExp(token));
    const removed = await postForm(
      h,
      '/security/tokens/remove',
      { _csrf: alice.csrf, name: 'deploy' },
      alice.cookie,
    );
    assert.equal(removed.status, 303);
    assert.doesNotMatch((await get(h, '/security', alice.cookie)).body, /data-label="Name">deploy/);
  });

  it('refuses a password change whose new passwords differ, or whose current one is wrong, beside the fields', async () => {
    const differ = await postForm(
      h,
      '/security/password',
      {
        _csrf: alice.csrf,
        current_password: HOLDER_PASSWORD,
        password: 'New-holder-pass-2',
        password2: 'other-pass-22',
      },
      alice.cookie,
    );
    assert.equal(differ.status, 400);
    assert.match(differ.body, /id="password2-error">The new passwords do not match\.<\/p>/);
    assert.doesNotMatch(differ.body, /New-holder-pass-2/, 'a password is never written back');
    const wrong = await postForm(
      h,
      '/security/password',
      {
        _csrf: alice.csrf,
        current_password: 'not-the-password',
        password: 'New-holder-pass-2',
        password2: 'New-holder-pass-2',
      },
      alice.cookie,
    );
    assert.equal(wrong.status, 400);
    assert.match(wrong.body, /id="current_password-error">Current password: /);
  });

  it('speaks the account’s language, and English for any other', async () => {
    const labels = {
      de: [
        '<html lang="de">',
        'Domain hinzufügen</button>',
        '<option value="parked">Geparkte Domain</option>',
        'Dokumentenstamm</label>',
      ],
      fr: [
        '<html lang="fr">',
        'Ajouter le domaine</button>',
        '<option value="parked">Domaine parqué</option>',
        'Racine des documents</label>',
      ],
      es: [
        '<html lang="es">',
        'Añadir dominio</button>',
        '<option value="parked">Dominio aparcado</option>',
        'Raíz de documentos</label>',
      ],
      pt_BR: [
        '<html lang="en">',
        'Add domain</button>',
        '<option value="parked">Parked domain</option>',
        'Document root</label>',
      ],
    };
    for (const [language, expected] of Object.entries(labels)) {
      const user = `l${language.toLowerCase().replace('_', '')}`;
      await createAccount(h, user, { password: HOLDER_PASSWORD, language });
      const { cookie } = await holderSession(h, user);
      const page = await get(h, '/domains', cookie);
      for (const text of expected) assert.ok(page.body.includes(text), `${language}: ${text}`);
    }
  });

  it('is dark for theme=dark whatever the browser prefers, and the browser’s for any other theme', async () => {
    await createAccount(h, 'darkone', { password: HOLDER_PASSWORD, theme: 'dark' });
    await createAccount(h, 'oddone', { password: HOLDER_PASSWORD, theme: 'paisley' });
    const dark = await get(h, '/', (await holderSession(h, 'darkone')).cookie);
    assert.match(dark.body, /<html lang="en" data-theme="dark">/);
    const odd = await get(h, '/', (await holderSession(h, 'oddone')).cookie);
    assert.match(odd.body, /<html lang="en">/);
  });

  it('gives the account next door nothing of this one: its domains, its tokens, its forms', async () => {
    await createAccount(h, 'mallory', { password: HOLDER_PASSWORD });
    const mallory = await holderSession(h, 'mallory');
    const aliceToken = await postForm(h, '/security/tokens', { _csrf: alice.csrf, name: 'ci' }, alice.cookie);
    assert.equal(aliceToken.status, 200);
    const asMallory = (url: string, fields: Record<string, string>) =>
      postForm(h, url, { _csrf: mallory.csrf, ...fields }, mallory.cookie);
    // Alice's domain and token are no objects of Mallory's account.
    assert.equal((await asMallory('/domains/remove', { domain: 'shop.example' })).status, 400);
    assert.equal((await asMallory('/security/tokens/remove', { name: 'ci' })).status, 400);
    // Nor can Mallory take a name under Alice's domains.
    const under = await asMallory('/domains', { domain: 'evil.shop.example', type: 'addon', docroot: '' });
    assert.equal(under.status, 400);
    const mine = await get(h, '/domains', mallory.cookie);
    assert.doesNotMatch(mine.body, /shop\.example/);
    assert.doesNotMatch((await get(h, '/security', mallory.cookie)).body, /data-label="Name">ci</);
    // Alice's session's form token does not pass with Mallory's cookie.
    const crossed = await postForm(
      h,
      '/domains/remove',
      { _csrf: alice.csrf, domain: 'mallory.example.com' },
      mallory.cookie,
    );
    assert.equal(crossed.status, 403);
    assert.match(
      (await get(h, '/domains', alice.cookie)).body,
      /<td data-label="Domain">shop\.example<\/td>/,
    );
    assert.match((await get(h, '/security', alice.cookie)).body, /<td data-label="Name">ci<\/td>/);
  });

  it('answers an unknown address with a panel page, and /api with the API’s JSON', async () => {
    const page = await get(h, '/no/such/page', alice.cookie);
    assert.equal(page.status, 404);
    assert.match(page.body, /The panel has no page at \/no\/such\/page\./);
    assert.match(page.body, /Account alice, alice\.example\.com/);
    const api = await get(h, '/api/nothing/');
    assert.match(String(api.headers['content-type']), /application\/json/);
    assert.equal(csrfOf(page.body), alice.csrf);
  });
});
