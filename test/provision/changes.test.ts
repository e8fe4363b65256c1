// A system change as it travels between the fleet's servers (CONTRACT §12): every kind, with the
// account's objects, arrives as it left; what is not a change is refused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changeMessage, changeOf, type SystemChange } from '../../src/provision/changes.ts';
import { type Account, toAccount } from '../../src/store/accounts.ts';
import { type AccountObjects, noObjects } from '../../src/store/objects.ts';

const account: Account = toAccount({
  user: 'alice',
  domain: 'alice.example',
  contact_email: 'alice@example.org',
  package: 'default',
  feature: 'default',
  owner: 'root',
  previous_owner: null,
  homedir: '/home/alice',
  language: 'en',
  theme: 'default',
  mailserver: 'local',
  dkim: 1,
  spf: 1,
  use_registrar_ns: 0,
  nameservers: '["ns1.example.net","ns2.example.net"]',
  setup_at: '2026-01-02T03:04:05.000Z',
  dedicated_ipv4: null,
  dedicated_ipv6: null,
  shell_enabled: 0,
  reseller: 0,
  reseller_id: null,
  selfown: 0,
  alpha: 0,
  reseller_limit: null,
  reseller_bandwidth: null,
  reseller_quota: null,
  addondomains: 2,
  parkeddomains: null,
  subdomains: null,
  email_accounts: null,
  ftp: null,
  sql: null,
  maillist: null,
  bandwidth: null,
  quota: 500,
  mailquota: null,
  suspended: 0,
  suspend_reason: null,
  suspended_at: null,
  suspended_by: null,
  quota_usage: 0,
  bandwidth_usage: 0,
  server: 'web2',
  uid: 10001,
});

const at = new Date('2026-02-03T04:05:06.000Z');
const main = {
  domain: 'alice.example',
  kind: 'main',
  docroot: 'public_html',
  createdAt: account.setupAt,
} as const;
const objects: AccountObjects = {
  domains: [
    main,
    { domain: 'alice-shop.example', kind: 'addon', docroot: 'public_html/alice-shop.example', createdAt: at },
    { domain: 'alice.example.net', kind: 'parked', docroot: null, createdAt: at },
    { domain: 'blog.alice.example', kind: 'subdomain', docroot: 'blog', createdAt: at },
  ],
  mailboxes: [{ email: 'info@alice-shop.example', passwordHash: '$6$salt$hash', quota: 50, createdAt: at }],
  forwarders: [{ email: 'sales@alice.example', to: ['a@elsewhere.example', 'b@x.example'], createdAt: at }],
  cron_jobs: [{ id: 'abcdefgh23', schedule: '*/5 * * * *', command: 'php cron.php', createdAt: at }],
  mailing_lists: [
    {
      email: 'news@alice.example',
      owner: 'alice@elsewhere.example',
      members: ['m@x.example'],
      createdAt: at,
    },
  ],
  databases: [{ name: 'alice_wp', createdAt: at }],
  database_users: [
    { name: 'alice_wp', passwordHash: `*${'A1'.repeat(20)}`, grants: ['alice_wp'], createdAt: at },
  ],
  ftp_accounts: [
    { login: 'designer', passwordHash: '$6$salt$hash', directory: 'public_html', quota: 200, createdAt: at },
  ],
};
const mainOnly: AccountObjects = { ...noObjects(), domains: [main] };

const travelled = (change: SystemChange) => changeOf(JSON.parse(JSON.stringify(changeMessage(change))));

describe('a system change between servers', () => {
  const changes: SystemChange[] = [
    { kind: 'create', account, objects, password: 'Password-1' },
    { kind: 'create', account, objects, password: 'Password-1', passwordHash: '$6$salt$hash' },
    { kind: 'remove', account, objects },
    { kind: 'suspend', account, objects },
    { kind: 'unsuspend', account, objects },
    { kind: 'password', account, objects, password: 'Password-2' },
    { kind: 'password', account, objects, password: 'Password-2', passwordHash: '$6$salt$hash2' },
    { kind: 'limits', before: { ...account, limits: { ...account.limits, quota: 100 } }, account, objects },
    { kind: 'objects', account, before: mainOnly, objects },
  ];
  for (const change of changes)
    it(`arrives as it left: ${change.kind}${'passwordHash' in change ? ' with its hash' : ''}, with the account's objects`, () => {
      assert.deepEqual(travelled(change), change);
    });

  it('carries the objects as store rows, each naming its account', () => {
    const message = changeMessage({ kind: 'suspend', account, objects }) as {
      objects: { domains: object[]; cron_jobs: object[] };
    };
    assert.deepEqual(message.objects.cron_jobs, [
      {
        id: 'abcdefgh23',
        user: 'alice',
        schedule: '*/5 * * * *',
        command: 'php cron.php',
        created_at: '2026-02-03T04:05:06.000Z',
      },
    ]);
    assert.deepEqual(message.objects.domains[2], {
      domain: 'alice.example.net',
      user: 'alice',
      kind: 'parked',
      docroot: null,
      created_at: '2026-02-03T04:05:06.000Z',
      mail: null,
    });
  });

  it('gives a change from a server that sends no objects the account’s main domain alone', () => {
    const { objects: _sent, ...message } = changeMessage({ kind: 'suspend', account, objects }) as Record<
      string,
      unknown
    >;
    assert.deepEqual(changeOf(message), { kind: 'suspend', account, objects: mainOnly });
  });

  it('carries an FTP account with its password hash (move-account takes it to the new server)', () => {
    const message = changeMessage({ kind: 'suspend', account, objects }) as {
      objects: { ftp_accounts: object[] };
    };
    assert.deepEqual(message.objects.ftp_accounts, [
      {
        user: 'alice',
        login: 'designer',
        password_hash: '$6$salt$hash',
        directory: 'public_html',
        quota: 200,
        created_at: '2026-02-03T04:05:06.000Z',
      },
    ]);
  });

  it('gives a change from a server that keeps no mailboxes, forwarders, cron jobs or FTP accounts none of them', () => {
    const message = changeMessage({ kind: 'suspend', account, objects }) as {
      objects: Record<string, unknown>;
    };
    const { mailboxes: _m, forwarders: _f, cron_jobs: _c, ftp_accounts: _ftp, ...older } = message.objects;
    assert.deepEqual(changeOf({ ...message, objects: older }), {
      kind: 'suspend',
      account,
      objects: { ...objects, mailboxes: [], forwarders: [], cron_jobs: [], ftp_accounts: [] },
    });
  });

  it('refuses what is not a change', () => {
    const suspend = changeMessage({ kind: 'suspend', account, objects }) as Record<string, unknown>;
    for (const message of [
      null,
      'suspend',
      { ...suspend, kind: 'reboot' },
      { ...suspend, kind: 'toString' },
      { ...suspend, account: null },
      { ...suspend, kind: 'password' },
      { ...suspend, objects: { domains: 'alice.example' } },
      { ...suspend, objects: {} },
      { kind: 'objects', account: suspend.account, objects: suspend.objects },
    ])
      assert.equal(changeOf(message), null, JSON.stringify(message));
  });
});
