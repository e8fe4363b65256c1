import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listAudit } from '../../src/store/audit.ts';
import {
  assertErrorAnswer,
  assertRefused,
  createAccount,
  createReseller,
  errorOf,
  type Harness,
  recordingDriver,
  setup,
  suiteHarness,
} from '../helpers.ts';

const BASE = { domain: 'alice.example.com', user: 'alice', email: 'alice@example.org', package: 'default' };

async function count(h: Harness): Promise<number> {
  return ((await h.call('get_current_users_count')).body.data as { users: number }).users;
}

describe('createacct', () => {
  const h = suiteHarness({
    config: { ipPool: { ipv4: ['198.51.100.10'], ipv6: [] } },
    prepare: async (h) => {
      await h.call('addpkg', {
        name: 'gold',
        quota: '5000',
        bandwidth: '20000',
        feature: 'goldfeatures',
        shell: 'on',
        ftp: '5',
      });
    },
  });

  it('creates an account and answers with its record', async () => {
    const reply = await h.call('createacct', BASE);
    assert.equal(reply.statusCode, 200);
    assert.equal(reply.body.info, 'Account alice created');
    const data = reply.body.data as Record<string, unknown>;
    assert.match(String(data.setuptime), /^\d{4}-\d\d-\d\d \d\d:\d\d$/);
    assert.deepEqual(
      { ...data, setuptime: '-' },
      {
        user: 'alice',
        domain: 'alice.example.com',
        contactemail: 'alice@example.org',
        package: 'default',
        feature: 'default',
        owner: 'root',
        homedir: '/home/alice',
        language: 'en',
        theme: 'default',
        mailserver: 'local',
        dkim: 'on',
        spf: 'on',
        setuptime: '-',
        nameservers: ['ns1.panel.example.net', 'ns2.panel.example.net'],
        dedicatedip: { ipv4: '192.0.2.1', ipv6: '', status: 'off', status6: 'off' },
        shell: { shell: '/usr/sbin/nologin', status: 'off' },
        reseller: { status: 'off', selfown: 'off', alpha: 'off' },
        addondomains: 'unlimited',
        parkeddomains: 'unlimited',
        subdomains: 'unlimited',
        email: 'unlimited',
        ftp: 'unlimited',
        sql: 'unlimited',
        maillist: 'unlimited',
        bandwidth: 'unlimited',
        quota: 'unlimited',
        mailquota: 'unlimited',
        server: 'panel',
      },
    );
    assert.equal(reply.body.status, 200);
  });

  it('refuses each missing required parameter with 400 missing_parameter naming it', async () => {
    for (const param of ['domain', 'user', 'email', 'package']) {
      const params: Record<string, string> = { ...BASE, user: 'missing1', domain: 'missing1.example' };
      delete params[param];
      assert.deepEqual(errorOf(await h.call('createacct', params)), {
        status: 400,
        code: 'missing_parameter',
        param,
      });
      params[param] = '';
      assert.deepEqual(errorOf(await h.call('createacct', params)), {
        status: 400,
        code: 'missing_parameter',
        param,
      });
    }
  });

  it('refuses values that break the rules with 400 invalid_parameter naming the parameter', async () => {
    const cases: [string, string][] = [
      ['user', 'Bob'],
      ['user', 'test1'],
      ['user', 'root'],
      // Names a system package may claim later: refused on every driver, the record one included.
      ['user', 'crontab'],
      ['user', 'systemd'],
      ['user', 'systemdnet'],
      ['user', 'postfix'],
      ['domain', 'nodot'],
      // An xn-- label that is no punycode at all.
      ['domain', 'xn--zz.example'],
      ['domain', 'panel.example.net'],
      ['email', 'not-an-address'],
      ['package', '-bad'],
      ['quota', '-5'],
      ['quota', '2147483648'],
      ['dkim', 'maybe'],
      ['mailserver', 'elsewhere'],
      ['password', 'short'],
      ['language', 'english!'],
    ];
    for (const [param, value] of cases) {
      const reply = await h.call('createacct', {
        ...BASE,
        user: 'valid1',
        domain: 'valid1.example',
        [param]: value,
      });
      assert.deepEqual(
        errorOf(reply),
        { status: 400, code: 'invalid_parameter', param },
        `${param}=${value}`,
      );
    }
  });

  it('refuses a taken user name, a taken domain (in any case) and an unknown package', async () => {
    await createAccount(h, 'taken');
    assertRefused(
      await h.call('createacct', { ...BASE, user: 'taken', domain: 'other.example' }),
      400,
      'account_exists',
      'user',
    );
    assertRefused(
      await h.call('createacct', { ...BASE, user: 'taken2', domain: 'TAKEN.example.com.' }),
      400,
      'domain_in_use',
      'domain',
    );
    assertRefused(
      await h.call('createacct', { ...BASE, user: 'nopkg', domain: 'nopkg.example', package: 'Gold' }),
      400,
      'package_not_found',
      'package',
    );
  });

  it("takes the package's limits, feature list and shell, with per-account values winning", async () => {
    const reply = await createAccount(h, 'golduser', {
      package: 'gold',
      quota: '007',
      email_accounts: '12',
      dkim: 'no',
      spf: 'FALSE',
      mailserver: 'remote',
    });
    const data = reply.body.data as Record<string, unknown>;
    assert.equal(data.quota, '7');
    assert.equal(data.bandwidth, '20000');
    assert.equal(data.ftp, '5');
    assert.equal(data.email, '12');
    assert.equal(data.feature, 'goldfeatures');
    assert.deepEqual(data.shell, { shell: '/bin/bash', status: 'on' });
    assert.equal(data.dkim, 'off');
    assert.equal(data.spf, 'off');
    assert.equal(data.mailserver, 'remote');
  });

  it('lower-cases the domain and turns an IDN into punycode', async () => {
    const reply = await createAccount(h, 'idn', { domain: 'Bücher-Idn.Example.' });
    assert.equal((reply.body.data as { domain: string }).domain, 'xn--bcher-idn-q9a.example');
  });

  it('takes a dedicated address from the pool, and answers no_free_ip when it is empty', async () => {
    const reply = await createAccount(h, 'dedicated', { ipv4: 'on' });
    assert.deepEqual((reply.body.data as { dedicatedip: unknown }).dedicatedip, {
      ipv4: '198.51.100.10',
      ipv6: '',
      status: 'on',
      status6: 'off',
    });
    const before = await count(h);
    assertRefused(
      await h.call('createacct', { ...BASE, user: 'nofree', domain: 'nofree.example', ipv4: '1' }),
      400,
      'no_free_ip',
      'ipv4',
    );
    assertRefused(
      await h.call('createacct', { ...BASE, user: 'nofree6', domain: 'nofree6.example', ipv6: 'on' }),
      400,
      'no_free_ip',
      'ipv6',
    );
    assert.equal(await count(h), before);
    await h.call('removeacct', { user: 'dedicated' });
    const again = await createAccount(h, 'dedicated2', { ipv4: 'on' });
    assert.equal((again.body.data as { dedicatedip: { ipv4: string } }).dedicatedip.ipv4, '198.51.100.10');
  });

  it('creates a reseller with reseller=on, owning itself with resellerself=on', async () => {
    const plain = await createAccount(h, 'resa', { reseller: 'on', reseller_limt: '3' });
    assert.deepEqual((plain.body.data as { reseller: unknown }).reseller, {
      status: 'on',
      selfown: 'off',
      alpha: 'off',
    });
    const self = await createAccount(h, 'resb', { reseller: 'on', resellerself: 'on' });
    const data = self.body.data as { owner: string; reseller: unknown };
    assert.equal(data.owner, 'resb');
    assert.deepEqual(data.reseller, { status: 'on', selfown: 'on', alpha: 'off' });
  });

  it('appends an audit entry for a created and for a refused account', async () => {
    await createAccount(h, 'audited');
    await h.call('createacct', { ...BASE, user: 'audited' });
    const [refused, created] = await listAudit(h.services.store.db, { limit: 2 });
    assert.equal(refused?.operation, 'createacct');
    assert.equal(refused?.target, 'audited');
    assert.equal(refused?.status, 400);
    assert.equal(refused?.code, 'account_exists');
    assert.equal(created?.status, 200);
    assert.equal(created?.api_user, 'billing');
    assert.equal(created?.address, '127.0.0.1');
  });
});

describe('createacct under a reseller', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createReseller(h, 'res', {
        reseller_limt: '2',
        reseller_quota: '1000',
        reseller_bandwidth: '5000',
      });
    },
  });

  const child = (user: string, extra: Record<string, string> = {}) => ({
    user,
    domain: `${user}.example`,
    email: `${user}@example.com`,
    package: 'default',
    quota: '400',
    bandwidth: '1000',
    ...extra,
  });

  it('makes the reseller the owner', async () => {
    const reply = await h.callAs('res', 'createacct', child('kid1'));
    assert.equal(reply.statusCode, 200);
    assert.equal((reply.body.data as { owner: string }).owner, 'res');
  });

  it('refuses an unlimited or too large quota under a limited reseller', async () => {
    assertRefused(
      await h.callAs('res', 'createacct', child('kid2', { quota: 'unlimited' })),
      400,
      'reseller_limit',
      'quota',
    );
    assertRefused(
      await h.callAs('res', 'createacct', child('kid2', { quota: '601' })),
      400,
      'reseller_limit',
      'quota',
    );
    assertRefused(
      await h.callAs('res', 'createacct', child('kid2', { bandwidth: '4001' })),
      400,
      'reseller_limit',
      'bandwidth',
    );
  });

  it('refuses an account past reseller_limt', async () => {
    assert.equal((await h.callAs('res', 'createacct', child('kid3', { quota: '100' }))).statusCode, 200);
    assertRefused(
      await h.callAs('res', 'createacct', child('kid4', { quota: '100' })),
      400,
      'reseller_limit',
      undefined,
    );
  });

  it('needs the alpha feature for reseller=on, and never allows resellerself', async () => {
    await createReseller(h, 'alphares');
    assert.deepEqual(
      errorOf(await h.callAs('alphares', 'createacct', child('sub1', { reseller: 'on' }))).code,
      'forbidden',
    );
    await h.call('setupreseller', { user: 'alphares', alpha: 'on' });
    assert.equal(
      (await h.callAs('alphares', 'createacct', child('sub1', { reseller: 'on' }))).statusCode,
      200,
    );
    assert.equal(
      errorOf(await h.callAs('alphares', 'createacct', child('sub2', { reseller: 'on', resellerself: 'on' })))
        .code,
      'forbidden',
    );
  });
});

describe('createacct with a failing system step', () => {
  it('answers 500 provisioning_failed naming the step, undoes the finished steps and keeps nothing', async () => {
    const driver = recordingDriver();
    const h = await setup({}, { driver });
    try {
      driver.failAt = 'create:third';
      const reply = await h.call('createacct', BASE);
      assertErrorAnswer(
        reply,
        500,
        'provisioning_failed',
        'The system step "create:third" failed; everything done for this call was undone.',
      );
      assert.deepEqual(driver.log, [
        'run create:first alice',
        'run create:second alice',
        'undo create:second alice',
        'undo create:first alice',
      ]);
      assert.equal(await count(h), 0);
      driver.failAt = null;
      assert.equal((await h.call('createacct', BASE)).statusCode, 200);
    } finally {
      await h.close();
    }
  });
});

describe('createacct with a configured server', () => {
  it('puts homes under the home base and writes the configured name servers and shell', async () => {
    const h = await setup({ homeBase: '/srv/homes/', nameservers: ['ns.example.net'], shell: '/bin/sh' });
    try {
      const reply = await createAccount(h, 'conf', { shell: 'on' });
      const data = reply.body.data as Record<string, unknown>;
      assert.equal(data.homedir, '/srv/homes/conf');
      assert.deepEqual(data.nameservers, ['ns.example.net']);
      assert.deepEqual(data.shell, { shell: '/bin/sh', status: 'on' });
    } finally {
      await h.close();
    }
  });
});
