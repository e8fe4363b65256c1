// The portal's refused forms, called in-process: every form of the form kit refuses the same way
// (every field's error at once in its label's words, aria-invalid and aria-describedby on the
// field, an announced summary linking to each bad field, the title beginning "Error: ", what was
// typed kept and never a password), and the API Manager's create form shows all of its errors.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FieldErrors, invalid, missing } from '../../src/core/errors.ts';
import { inLabelWords, refusal } from '../../src/web-kit/form.ts';
import { createAccount, forSuite } from '../helpers.ts';
import { cookieValue, csrfOf, get, type Page, portalHarness, postForm, signedIn } from './pages.ts';

/** Checks a refused page the way assistive technology reads it; returns the bad fields' ids. */
function assertRefused(page: Page, title: string): string[] {
  assert.equal(page.status >= 400, true, `status ${page.status}`);
  assert.match(page.body, new RegExp(`<title>Error: ${title} · Berth</title>`));
  const summary = /<div class="error-summary" role="alert"[^>]*>([\s\S]*?)<\/div>/.exec(page.body);
  assert.ok(summary, 'an announced summary');
  const links = [...summary[1]!.matchAll(/<a href="#([^"]+)">([^<]+)<\/a>/g)].map((m) => m[1]!);
  const invalid = [
    ...page.body.matchAll(/<(?:input|textarea|select) id="([^"]+)"[^>]*aria-invalid="true"/g),
  ].map((m) => m[1]!);
  assert.deepEqual(links, invalid, 'the summary links to each invalid field, in order');
  for (const id of invalid) {
    const control = new RegExp(`id="${id}"[^>]*aria-describedby="([^"]*)"`).exec(page.body);
    assert.ok(control?.[1]?.split(' ').includes(`${id}-error`), `${id} is described by its error`);
    assert.match(page.body, new RegExp(`<p class="field-error" id="${id}-error">[^<]+</p>`));
  }
  assert.doesNotMatch(page.body, /The parameter /, 'errors in the labels’ words');
  return invalid;
}

describe('the portal’s refused forms', () => {
  let cookie: string;
  let csrf: string;
  const h = forSuite(async () => {
    const h = await portalHarness();
    ({ cookie, csrf } = await signedIn(h));
    await createAccount(h, 'alice');
    return h;
  });

  it('words an operation’s refusal with the field’s label', () => {
    assert.equal(
      inLabelWords(
        'email',
        invalid('email', 'an e-mail address has the form local@domain').message,
        'Contact e-mail',
      ),
      'Contact e-mail: an e-mail address has the form local@domain.',
    );
    assert.equal(inLabelWords('domain', missing('domain').message, 'Domain'), 'Domain is required.');
    const spec = { quota: { label: 'Disk quota (MB)', id: 'new-quota' } };
    const both = new FieldErrors([
      invalid('quota', 'a limit is a number'),
      invalid('other', 'no such thing'),
    ]);
    assert.deepEqual(refusal(spec, both), {
      quota: 'Disk quota (MB): a limit is a number.',
      form: 'The parameter other is invalid: no such thing.',
    });
  });

  it('shows every error of the API Manager’s create form at once, keeping all but the passwords', async () => {
    const page = await postForm(
      h,
      '/preferences/api-manager',
      {
        _csrf: csrf,
        name: 'Bad Name',
        password: 'short',
        password2: 'other',
        access: 'restricted',
        allowed_ips: '203.0.113.7\nnot-an-address',
        reseller: 'alice',
      },
      cookie,
    );
    assert.equal(page.status, 400);
    assert.deepEqual(assertRefused(page, 'Preferences › API Manager'), [
      'name',
      'password',
      'password2',
      'allowed_ips',
      'reseller',
    ]);
    assert.match(page.body, /id="name-error">API user name: an API user name is 1 to 32/);
    assert.match(page.body, /id="password-error">Password: a password is 8 to 128 characters long\./);
    assert.match(page.body, /id="password2-error">The two passwords do not match\./);
    assert.match(page.body, /id="allowed_ips-error">Allowed IPs: &quot;not-an-address&quot; is not an IPv4/);
    assert.match(page.body, /id="reseller-error">Bound reseller: alice is not a reseller account\./);
    assert.match(page.body, />203\.0\.113\.7\nnot-an-address<\/textarea>/);
    assert.doesNotMatch(page.body, /value="short"|value="other"/);

    // With matching passwords the refusals still come all at once (the call itself is refused).
    const again = await postForm(
      h,
      '/preferences/api-manager',
      {
        _csrf: csrf,
        name: 'Bad Name',
        password: 'long-enough-1',
        password2: 'long-enough-1',
        access: 'restricted',
        allowed_ips: 'nowhere',
        reseller: '',
      },
      cookie,
    );
    assert.deepEqual(assertRefused(again, 'Preferences › API Manager'), ['name', 'allowed_ips']);
  });

  it('refuses every other form of the portal the same way', async () => {
    const refused = async (url: string, fields: Record<string, string>, title: string) =>
      assertRefused(await postForm(h, url, { _csrf: csrf, ...fields }, cookie), title);

    assert.deepEqual(
      await refused(
        '/new-account',
        { user: 'Bad User', domain: 'nodot', email: 'nobody', package: 'default', password: 'short' },
        'Create an account',
      ),
      ['user', 'domain', 'email', 'password'],
    );
    assert.deepEqual(
      await refused('/packages', { name: 'Bronze', quota: 'lots', email_accounts: '-1' }, 'Packages'),
      ['new-quota', 'new-email_accounts'],
    );
    assert.deepEqual(await refused('/packages/default', { quota: 'lots', feature: '' }, 'Package default'), [
      'quota',
    ]);
    assert.deepEqual(await refused('/accounts/alice/suspend', { reason: ' ' }, 'Suspend alice\\?'), [
      'reason',
    ]);
    const made = await postForm(
      h,
      '/preferences/api-manager',
      {
        _csrf: csrf,
        name: 'hostbill',
        password: 'billing-pass-1',
        password2: 'billing-pass-1',
        access: 'open',
      },
      cookie,
    );
    assert.equal(made.status, 303, made.body.match(/field-error[^<]*/g)?.join());
    assert.deepEqual(
      await refused(
        '/preferences/api-manager/hostbill/password',
        { password: 'short', password2: 'other' },
        'API user hostbill',
      ),
      ['password', 'password2'],
    );
    assert.deepEqual(
      await refused(
        '/preferences/api-manager/hostbill/access',
        { access: 'restricted', allowed_ips: '' },
        'API user hostbill',
      ),
      ['access-allowed_ips'],
    );
  });

  it('announces a refused login, keeping the user name and never the password', async () => {
    const form = await get(h, '/login');
    const page = await postForm(
      h,
      '/login',
      { _csrf: csrfOf(form.body), username: 'root', password: 'not-the-password' },
      cookieValue(form.headers, 'berth_login'),
    );
    assert.equal(page.status, 403);
    assertRefused(page, 'Log in');
    assert.match(page.body, /<li>Wrong user name or password\.<\/li>/);
    assert.match(page.body, /name="username"[^>]*value="root"/);
    assert.doesNotMatch(page.body, /not-the-password/);
  });

  it('keeps the navigation and the skip link on the page that refuses a forged form', async () => {
    const page = await postForm(h, '/accounts/alice/unsuspend', { _csrf: 'forged' }, cookie);
    assert.equal(page.status, 403);
    assert.match(page.body, /<a class="skip" href="#main">Skip to main content<\/a>/);
    assert.match(page.body, /<nav aria-label="Main">/);
    assert.match(page.body, /<main id="main" tabindex="-1">/);
  });
});
