import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, FILE_KEYS, loadConfig } from '../src/config/index.ts';
import { tempDir } from './helpers.ts';

describe('configuration', () => {
  const dataDir = tempDir('berth-config-');
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('has the documented defaults', () => {
    const config = loadConfig({ dataDir });
    assert.equal(config.port, 5555);
    assert.equal(config.resellerPort, 4444);
    assert.equal(config.tls, true);
    assert.equal(config.driver, 'record');
    assert.equal(config.homeBase, '/home');
    assert.equal(config.shell, '/bin/bash');
    assert.deepEqual(config.nameservers, [`ns1.${config.hostName}`, `ns2.${config.hostName}`]);
    assert.deepEqual(config.lockout, { maxFailures: 10, windowMinutes: 15, lockMinutes: 15 });
    assert.ok(config.reservedDomains.includes('gmail.com'));
    assert.equal(config.publicSuffixList, '/usr/share/publicsuffix/public_suffix_list.dat');
  });

  it('reads berth.toml, then the environment, then flags', () => {
    writeFileSync(
      join(dataDir, 'berth.toml'),
      [
        'host_name = "panel.example.net"',
        'home_base = "/srv/home"',
        'nameservers = ["a.example.net", "b.example.net", "c.example.net"]',
        'trusted_proxies = ["10.0.0.0/8"]',
        'reserved_domains = ["Partner.example"]',
        'trusted_addresses = ["127.0.0.1", "::ffff:10.1.2.3", "2001:db8::/32"]',
        '[ip_pool]',
        'ipv4 = ["198.51.100.7"]',
        '[lockout]',
        'max_failures = 5',
      ].join('\n'),
    );
    process.env.BERTH_PORT = '6000';
    try {
      const fromFile = loadConfig({ dataDir });
      assert.equal(fromFile.hostName, 'panel.example.net');
      assert.equal(fromFile.homeBase, '/srv/home');
      assert.deepEqual(fromFile.nameservers, ['a.example.net', 'b.example.net', 'c.example.net']);
      assert.deepEqual(fromFile.trustedProxies, ['10.0.0.0/8']);
      assert.deepEqual(fromFile.reservedDomains, ['partner.example']);
      assert.deepEqual(fromFile.trustedAddresses, ['127.0.0.1', '10.1.2.3', '2001:db8::/32']);
      assert.deepEqual(fromFile.ipPool, { ipv4: ['198.51.100.7'], ipv6: [], resellerShare: 0.5 });
      assert.equal(fromFile.lockout.maxFailures, 5);
      assert.equal(fromFile.lockout.windowMinutes, 15);
      assert.equal(fromFile.port, 6000);
      assert.equal(loadConfig({ dataDir, port: 7000 }).port, 7000);
    } finally {
      delete process.env.BERTH_PORT;
      rmSync(join(dataDir, 'berth.toml'));
    }
  });

  it('takes every setting serve takes from the file: driver, host, ports, TLS, demo, database, system root', () => {
    writeFileSync(
      join(dataDir, 'berth.toml'),
      [
        'driver = "linux"',
        'host = "127.0.0.1"',
        'port = 6555',
        'reseller_port = 6444',
        'demo = true',
        'database = "postgres://berth@db.example.net/berth"',
        '[tls]',
        'enabled = false',
        '[linux]',
        'system_root = "/srv/staging"',
      ].join('\n'),
    );
    try {
      const config = loadConfig({ dataDir });
      assert.equal(config.driver, 'linux');
      assert.equal(config.host, '127.0.0.1');
      assert.equal(config.port, 6555);
      assert.equal(config.resellerPort, 6444);
      assert.equal(config.demo, true);
      assert.equal(config.tls, false);
      assert.equal(config.database, 'postgres://berth@db.example.net/berth');
      assert.equal(config.linux.systemRoot, '/srv/staging');
      // Flags still win over the file.
      assert.equal(loadConfig({ dataDir, driver: 'record' }).driver, 'record');
    } finally {
      rmSync(join(dataDir, 'berth.toml'));
    }
  });

  it('refuses an unknown key and a value it cannot use, naming the file and the key', () => {
    const file = join(dataDir, 'berth.toml');
    for (const [toml, message] of [
      ['drivr = "linux"', `${file}: unknown key drivr`],
      ['[linux]\nhttp_prot = 80', `${file}: unknown key linux.http_prot`],
      [
        '[linux]\nreload_imap = ["/usr/bin/doveadm", "reload"]',
        `${file}: linux.reload_imap is no longer used: Dovecot reads its logins from a database and is never reloaded; remove it`,
      ],
      ['[mail]\nport = 25', `${file}: unknown section [mail]`],
      ['driver = "docker"', `${file}: driver must be one of "record", "linux"`],
      ['port = "5555"', `${file}: port must be a whole number`],
      ['port = 70000', `${file}: port must be from 0 to 65535`],
      ['demo = "yes"', `${file}: demo must be true or false`],
      ['host = "10.0.0.0/8"', `${file}: host must be an IP address, not the range "10.0.0.0/8"`],
      [
        '[linux]\ncomponents = ["user", "gopher"]',
        `${file}: linux.components item 2 must be one of "user", "php", "tls", "web", "dns", "mail", "shell", "cron", "lists", "database", "ftp", "webmail"`,
      ],
      [
        '[linux]\ncomponents = ["web"]',
        `${file}: linux.components must include "user", which cannot be left out`,
      ],
      [
        '[linux]\nreload_web = ["nginx", "-s", "reload"]',
        `${file}: linux.reload_web must start with an absolute path`,
      ],
      [
        '[[webhooks]]\nurl = "https://hooks.example.net/berth"\nsecret = "0123456789abcdef"\nevent = ["x"]',
        `${file} [[webhooks]] #1: unknown key event`,
      ],
      [
        '[linux]\nftp_passive_ports = "30100:30000"',
        `${file}: linux.ftp_passive_ports must be "first:last", two ports from 1024 to 65535, the first not above the last`,
      ],
      ['linux = 3', `${file}: linux must be a [linux] table`],
      [
        '[tls]\ncert = "/etc/ssl/berth/fullchain.pem"',
        `${file}: tls.cert and tls.key go together: set both or neither`,
      ],
    ] as const) {
      writeFileSync(file, toml);
      assert.throws(
        () => loadConfig({ dataDir }),
        (error: unknown) => error instanceof ConfigError && error.message === message,
        toml,
      );
    }
    rmSync(file);
  });

  it('documents every key of berth.toml', () => {
    const docs = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    for (const key of FILE_KEYS) {
      const [section, name] = key.includes('.') ? key.split('.') : [null, key];
      const table = section === 'webhooks' ? '[[webhooks]]' : section ? `[${section}]` : null;
      // The block of the file's example the key belongs in: before the first table, or its table.
      const at = table === null ? docs.indexOf('```toml\n') : docs.indexOf(`\n${table}\n`);
      assert.ok(at >= 0, `${table} in docs/configuration.md`);
      const block = docs.slice(at + 1).split(/\n\[|\n```/)[0]!;
      assert.match(block, new RegExp(`^#? ?${name} = `, 'm'), key);
    }
  });

  it('refuses values that do not parse, with a reason', () => {
    for (const [toml, pattern] of [
      ['home_base = "relative"', /home_base/],
      ['trusted_proxies = ["not-an-ip"]', /trusted_proxies/],
      ['trusted_addresses = ["localhost"]', /trusted_addresses/],
      ['trusted_addresses = "127.0.0.1"', /trusted_addresses must be a list/],
      ['[ip_pool]\nipv4 = ["2001:db8::1"]', /ipv4/],
      ['[lockout]\nmax_failures = 0', /max_failures/],
      ['reserved_domains = "gmail.com"', /reserved_domains must be a list/],
      ['reserved_domains = ["not a domain"]', /reserved_domains item 1 must be a host name/],
      ['public_suffix_list = "relative.dat"', /public_suffix_list must be an absolute path/],
      ['this is not toml', /berth\.toml/],
    ] as const) {
      writeFileSync(join(dataDir, 'berth.toml'), toml);
      assert.throws(
        () => loadConfig({ dataDir }),
        (error: unknown) => error instanceof ConfigError && pattern.test(error.message),
        toml,
      );
    }
    rmSync(join(dataDir, 'berth.toml'));
    process.env.BERTH_HOST = 'localhost';
    try {
      assert.throws(
        () => loadConfig({ dataDir }),
        (error: unknown) =>
          error instanceof ConfigError && /^BERTH_HOST must be an IPv4 or IPv6 address/.test(error.message),
      );
    } finally {
      delete process.env.BERTH_HOST;
    }
    process.env.BERTH_DRIVER = 'docker';
    try {
      assert.throws(() => loadConfig({ dataDir }), ConfigError);
    } finally {
      delete process.env.BERTH_DRIVER;
    }
  });
});

describe('configuration sections', () => {
  const dataDir = tempDir('berth-config-');
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keep their defaults for every key a file leaves out', () => {
    writeFileSync(
      join(dataDir, 'berth.toml'),
      'trusted_proxies = ["127.0.0.1"]\n[limits]\nheader_timeout = 5\n[linux]\nhttp_port = 8080\n',
    );
    const config = loadConfig({ dataDir });
    assert.deepEqual(config.limits, {
      headerTimeout: 5,
      requestTimeout: 30,
      keepAliveTimeout: 30,
      maxConnections: 2000,
      maxConnectionsPerAddress: 200,
    });
    assert.equal(config.linux.httpPort, 8080);
    assert.equal(config.linux.nginxDir, '/etc/nginx/sites-enabled');
    assert.deepEqual(config.lockout, { maxFailures: 10, windowMinutes: 15, lockMinutes: 15 });
  });

  it('signal the master of the pid file configured, unless the reload command is set too', () => {
    writeFileSync(join(dataDir, 'berth.toml'), '[linux]\nnginx_pid_file = "/run/nginx/nginx.pid"\n');
    let { linux } = loadConfig({ dataDir });
    assert.deepEqual(linux.reloadWeb, ['/usr/bin/pkill', '-HUP', '--pidfile', '/run/nginx/nginx.pid']);
    writeFileSync(
      join(dataDir, 'berth.toml'),
      '[linux]\nnginx_pid_file = "/run/nginx/nginx.pid"\nreload_web = ["/usr/bin/systemctl", "reload", "nginx"]\n',
    );
    ({ linux } = loadConfig({ dataDir }));
    assert.deepEqual(linux.reloadWeb, ['/usr/bin/systemctl', 'reload', 'nginx']);
  });
});
