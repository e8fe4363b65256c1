// The domains of an account in the sandbox (CONTRACT §14), added by the administrator for its
// holder at /api/account/add_domain/: an addon domain, a parked domain and a subdomain each answer
// over HTTPS with a certificate Pebble issued through ACME (validated over HTTP against the zones
// the domains got), serving what each should; the addon domain is a mail domain of the account
// (mail to it arrives, its holder sends as it, signed); the holder's own removal on the customer
// API takes the site away.
import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { linuxDefaults } from '../../src/config/linux.ts';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  arrivedMessage,
  BERTH,
  curl,
  insecureRequest,
  type RunningSandbox,
  sandboxCall,
  smtpSend,
  startSandbox,
} from '../process.ts';

describe('domains added by the holder, in the sandbox', () => {
  const dataDir = tempDir('berth-sandbox-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  /** An operation of the holder's side, called by the administrator for alice. */
  const forAlice = async (operation: string, params: Record<string, string>) => {
    const reply = await insecureRequest(Number(new URL(sandbox.api).port), `/api/account/${operation}/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-api-user': sandbox.api_user,
        'x-api-password': sandbox.api_password,
      },
      body: new URLSearchParams({ user: 'alice', ...params }).toString(),
    });
    return { status: reply.status, body: JSON.parse(reply.body) as { data: unknown; info: string } };
  };
  /** The sandbox's BIND, asked once: a change is live when its call answers. */
  const bind = () => {
    const resolver = new Resolver({ timeout: 1000, tries: 1 });
    resolver.setServers([`127.0.0.1:${sandbox.dns_port}`]);
    return resolver;
  };
  /** A page of a site over HTTPS, verified against Pebble's root only. */
  const site = (domain: string, path = '/') =>
    curl([
      '--resolve',
      `${domain}:${sandbox.https_port}:127.0.0.1`,
      '--cacert',
      sandbox.acme_root_ca,
      `https://${domain}:${sandbox.https_port}${path}`,
    ]);
  /** The page once its ACME certificate has arrived (after the call has answered). */
  const acmePage = async (domain: string) => {
    let page = site(domain);
    for (let i = 0; i < 150 && page.status !== 200; i++) {
      await sleep(200);
      page = site(domain);
    }
    return page;
  };

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
    const made = await sandboxCall(sandbox, 'createacct', {
      user: 'alice',
      domain: 'alice.example',
      email: 'alice@example.org',
      package: 'default',
      password: 'Alice-pass-1234',
    });
    assert.equal(made.status, 200, made.info);
  });
  after(() => {
    if (running.child.exitCode === null) running.child.kill('SIGKILL');
  });

  it('an addon, a parked domain and a subdomain each answer over HTTPS with an ACME certificate', async () => {
    const domains: Record<string, string>[] = [
      { domain: 'alice-shop.example', type: 'addon' },
      { domain: 'alice.example.net', type: 'parked' },
      { domain: 'blog.alice.example', type: 'subdomain', docroot: 'blog' },
    ];
    for (const params of domains) {
      const added = await forAlice('add_domain', params);
      assert.equal(added.status, 200, added.body.info);
      assert.equal((added.body.data as { domain: string }).domain, params.domain);
      // Served by BIND as the call answers: a new zone (reconfig), or the subdomain's records in
      // its parent's zone (that zone reloaded alone).
      assert.ok((await bind().resolve4(params.domain!)).length > 0, `${params.domain} in DNS`);
    }
    const listed = await forAlice('list_domains', {});
    assert.deepEqual(
      (listed.body.data as { domain: string }[]).map((d) => d.domain),
      ['alice.example', 'alice-shop.example', 'alice.example.net', 'blog.alice.example'],
    );
    const write = await running.asUser(
      'alice',
      [
        'echo \'<?php echo "main site of ", posix_getpwuid(posix_geteuid())["name"];\' > /home/alice/public_html/index.php',
        'echo \'<?php echo "shop of ", posix_getpwuid(posix_geteuid())["name"];\' > /home/alice/public_html/alice-shop.example/index.php',
        'echo blog > /home/alice/blog/index.html',
      ].join(' && '),
    );
    assert.equal(write.code, 0, write.stderr);

    for (const [domain, body] of [
      ['alice-shop.example', 'shop of alice'],
      ['www.alice-shop.example', 'shop of alice'],
      ['alice.example.net', 'main site of alice'],
      ['blog.alice.example', 'blog\n'],
    ] as const) {
      const page = await acmePage(domain);
      assert.equal(page.status, 200, `${domain}: ${running.output().slice(-2000)}`);
      assert.equal(page.body, body, domain);
    }
  });

  it("an addon domain is a mail domain: its mail arrives in the account's mailbox, its holder sends as it, signed", async () => {
    const inbound = await smtpSend(sandbox, {
      port: sandbox.smtp_port,
      from: 'friend@example.org',
      to: ['alice@alice-shop.example'],
      message:
        'From: friend@example.org\nTo: alice@alice-shop.example\nSubject: to the shop\n\nHello shop.\n',
    });
    assert.match(inbound.data ?? '', /^250/, JSON.stringify(inbound));
    // The addon's own login reads the account's one mailbox.
    assert.match(await arrivedMessage(sandbox, 'alice@alice-shop.example:Alice-pass-1234', 1), /Hello shop/);
    const sent = await smtpSend(sandbox, {
      port: sandbox.submission_port,
      login: 'alice',
      password: 'Alice-pass-1234',
      from: 'alice@alice-shop.example',
      to: ['alice@alice.example'],
      message: 'From: alice@alice-shop.example\nTo: alice@alice.example\nSubject: from the shop\n\nSigned.\n',
    });
    assert.match(sent.data ?? '', /^250/, JSON.stringify(sent));
    const signed = await arrivedMessage(sandbox, 'alice:Alice-pass-1234', 2);
    assert.match(signed, /DKIM-Signature:[\s\S]*\bd=alice-shop\.example;/s);
  });

  it('remove_domain, called by the holder on the customer API, takes the site away', async () => {
    const reply = await insecureRequest(Number(new URL(sandbox.customer_api).port), '/api/remove_domain/', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('alice:Alice-pass-1234').toString('base64')}`,
      },
      body: new URLSearchParams({ domain: 'blog.alice.example' }).toString(),
    });
    assert.equal(reply.status, 200, reply.body);
    // Its records left its parent's zone, whose other names still answer.
    await assert.rejects(bind().resolve4('blog.alice.example'), { code: 'ENOTFOUND' });
    assert.ok((await bind().resolve4('alice.example')).length > 0);
    const page = curl([
      '--resolve',
      `blog.alice.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://blog.alice.example:${sandbox.https_port}/`,
    ]);
    assert.notEqual(page.body, 'blog\n');
    for (const path of ['/var/www/berth-sites/blog.alice.example', '/etc/berth/certs/blog.alice.example'])
      assert.equal((await running.exec(['/usr/bin/test', '-e', path])).code, 1, path);
    // The holder's files stay in the home.
    assert.equal((await running.exec(['/usr/bin/test', '-f', '/home/alice/blog/index.html'])).code, 0);
  });

  it('gives each zone to BIND as an added zone, takes a removed one away, and doctor tells one BIND lost', async () => {
    // BIND's added zones as Berth reads them (its bind_added_zones, whose default the sandbox keeps).
    const added = async () => (await running.exec(linuxDefaults().bindAddedZones)).stdout;
    for (const zone of ['alice.example', 'alice-shop.example', 'alice.example.net'])
      assert.match(
        await added(),
        new RegExp(
          `^zone "${zone.replaceAll('.', '\\.')}" \\{ type primary; file "/etc/bind/zones/${zone.replaceAll('.', '\\.')}\\.db"; \\};$`,
          'm',
        ),
      );
    // The list an older Berth had BIND include names no zone (BIND refuses one both included and added).
    const list = await running.exec(['/usr/bin/cat', '/etc/bind/named.conf.berth']);
    assert.doesNotMatch(list.stdout, /^zone /m);
    const removed = await forAlice('remove_domain', { domain: 'alice.example.net' });
    assert.equal(removed.status, 200, removed.body.info);
    // Unserved at once; gone from BIND's database of added zones a moment after delzone answers.
    let listed = await added();
    for (let i = 0; i < 100 && listed.includes('"alice.example.net"'); i++) {
      await sleep(50);
      listed = await added();
    }
    assert.doesNotMatch(listed, /"alice\.example\.net"/);
    // BIND no longer answers for it: a zone it does not have is refused (it recurses for no one).
    await assert.rejects(bind().resolve4('alice.example.net'), { code: 'EREFUSED' });
    // A zone BIND no longer has (its database of added zones lost it) is one doctor names.
    const toml = (await running.exec(['/usr/bin/cat', '/var/lib/berth/berth.toml'])).stdout;
    const rndcPort = /^rndc = \[.*"-p", "(\d+)"/m.exec(toml)?.[1];
    assert.ok(rndcPort, toml);
    const rndc = ['/usr/sbin/rndc', '-s', '127.0.0.1', '-p', rndcPort];
    assert.equal((await running.exec([...rndc, 'delzone', 'alice-shop.example'])).code, 0);
    const doctor = await running.exec([process.execPath, BERTH, 'doctor', '--data-dir', '/var/lib/berth']);
    assert.match(doctor.stdout, /alice \(alice-shop\.example\): zone not among BIND's added zones/);
    assert.doesNotMatch(doctor.stdout, /BIND takes no added zones/);
    // BIND's configuration without allow-new-zones (it would take and serve none of the zones).
    const named = [
      '/usr/bin/sed',
      '-i',
      's/allow-new-zones yes;/allow-new-zones no;/',
      '/etc/bind/named.conf',
    ];
    assert.equal((await running.exec(named)).code, 0);
    const without = await running.exec([process.execPath, BERTH, 'doctor', '--data-dir', '/var/lib/berth']);
    assert.match(without.stdout, /BIND takes no added zones: add 'allow-new-zones yes;' to its options/);
  });
});
