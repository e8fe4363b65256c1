// The sandbox from within: the process tini runs first in a new mount and PID namespace (sandbox.ts
// starts them). It lays throwaway overlays over every directory the stack writes, configures and
// starts Debian's nginx, PHP-FPM, BIND and Pebble on free 127.0.0.1 ports, then `berth serve
// --driver linux` with system root `/`, then Postfix, Dovecot, OpenDKIM and sshd (they read what
// Berth wrote when it started), and reports on standard output once all of it answers. On SIGINT,
// SIGTERM or its input closing, it stops them, Berth first; nothing it did outlives the namespace.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { get } from 'node:https';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SERVE_NODE_FLAGS } from '../config/serve-flags.ts';
import { accountGroups, detectLayout } from '../provision/linux/cgroups.ts';
import { issueFallback, makeFallbackCa } from '../provision/linux/tls/fallback.ts';
import { attachHomes, mountHomes } from './homes.ts';
import { BIN } from './sandbox.ts';

/**
 * Every directory the hosting stack (and its users) write: each is seen through an overlay; /home
 * then holds the sandbox's own btrfs filesystem (homes.ts).
 */
const OVERLAID = ['/etc', '/home', '/var', '/run', '/root', '/srv', '/tmp', '/opt'];
export const SANDBOX_HOST = 'sandbox.test';
const DATA_DIR = '/var/lib/berth';

const say = (text: string) => process.stderr.write(`sandbox: ${text}\n`);
const run = (argv: string[]) => execFileSync(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
const secret = () => randomBytes(18).toString('base64url');

/**
 * A port no one listens on, below the kernel's range for ephemeral ports (32768 and up): a port from
 * that range could be taken by any outgoing connection between this choice and the service's bind.
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 10_000 + randomInt(20_000);
    if (chosenPorts.has(port)) continue;
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (!free) continue;
    await new Promise((resolve) => server.close(resolve));
    chosenPorts.add(port);
    return port;
  }
}
const chosenPorts = new Set<number>();

async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

function mountOverlays(layers: string): void {
  run(['/usr/bin/mount', '-t', 'tmpfs', '-o', 'mode=0700', 'berth-sandbox', layers]);
  // The overlay over the directory that holds the layers goes last: after it, the layers' path
  // would lead into the overlay instead.
  const holds = (dir: string) => layers.startsWith(`${dir}/`);
  const order = OVERLAID.filter((d) => existsSync(d)).sort((a, b) => Number(holds(a)) - Number(holds(b)));
  for (const dir of order) {
    const name = dir.slice(1);
    const upper = join(layers, name, 'upper');
    const work = join(layers, name, 'work');
    mkdirSync(upper, { recursive: true });
    mkdirSync(work, { recursive: true });
    // The overlay's top directory takes the upper layer's owner and mode: /tmp stays 1777.
    const lower = statSync(dir);
    chownSync(upper, lower.uid, lower.gid);
    chmodSync(upper, lower.mode & 0o7777);
    run([
      '/usr/bin/mount',
      '-t',
      'overlay',
      `sandbox-${name}`,
      '-o',
      `lowerdir=${dir},upperdir=${upper},workdir=${work}`,
      dir,
    ]);
  }
  // A /dev/shm of its own: what accounts leave there goes with the sandbox, not to this machine.
  run(['/usr/bin/mount', '-t', 'tmpfs', '-o', 'mode=1777,nosuid,nodev', 'sandbox-shm', '/dev/shm']);
}

function write(path: string, content: string, mode = 0o644): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, content, { mode });
}

function emptyDirectory(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
}

interface Ports {
  api: number;
  reseller: number;
  http: number;
  https: number;
  dns: number;
  rndc: number;
  acme: number;
  acmeManagement: number;
  smtp: number;
  submission: number;
  imap: number;
  ssh: number;
}

interface Service {
  name: string;
  argv: string[];
  env?: Record<string, string>;
  /** The signal that stops it gracefully. */
  stop: NodeJS.Signals;
  /** Its umask: 0022 unless given. */
  umask?: number;
  child?: ChildProcess;
}

/**
 * A sandbox that is one server of a fleet of sandboxes: its name, and the PostgreSQL store the
 * others share (reached over this machine's loopback, which every sandbox shares).
 */
export interface SandboxFleet {
  node?: string;
  database?: string;
}

/** The API account made for the caller: one per server when sandboxes share a store. */
const apiUserOf = (fleet: SandboxFleet) => (fleet.node ? `sandbox-${fleet.node}` : 'sandbox');

function configure(
  ports: Ports,
  cgroupParent: string,
  pebbleTls: { cert: string; key: string },
  fleet: SandboxFleet,
): void {
  // nginx: Debian's nginx.conf as installed; no site but Berth's, and a default server that
  // refuses names Berth does not serve.
  emptyDirectory('/etc/nginx/sites-enabled');
  write(
    '/etc/nginx/conf.d/sandbox.conf',
    [
      '# The sandbox: a name no account has is refused.',
      'server {',
      `    listen 127.0.0.1:${ports.http} default_server;`,
      `    listen 127.0.0.1:${ports.https} ssl default_server;`,
      '    ssl_reject_handshake on;',
      '    return 444;',
      '}',
      '',
    ].join('\n'),
  );
  mkdirSync('/var/log/nginx', { recursive: true });
  // BIND: authoritative only, for the zones Berth lists.
  if (!existsSync('/etc/bind/rndc.key')) run(['/usr/sbin/rndc-confgen', '-a', '-c', '/etc/bind/rndc.key']);
  const bind = Number(run(['/usr/bin/id', '-u', 'bind']).toString().trim());
  const bindGroup = Number(run(['/usr/bin/id', '-g', 'bind']).toString().trim());
  chownSync('/etc/bind/rndc.key', 0, bindGroup);
  write('/etc/bind/named.conf.berth', '');
  write(
    '/etc/bind/named.conf',
    [
      'options {',
      '    directory "/var/cache/bind";',
      `    listen-on port ${ports.dns} { 127.0.0.1; };`,
      '    listen-on-v6 { none; };',
      '    recursion no;',
      '    allow-transfer { none; };',
      '    dnssec-validation no;',
      '    pid-file "/run/named/named.pid";',
      '};',
      'include "/etc/bind/rndc.key";',
      `controls { inet 127.0.0.1 port ${ports.rndc} allow { 127.0.0.1; } keys { "rndc-key"; }; };`,
      'include "/etc/bind/named.conf.berth";',
      '',
    ].join('\n'),
  );
  for (const dir of ['/run/named', '/var/cache/bind']) {
    mkdirSync(dir, { recursive: true });
    chownSync(dir, bind, bindGroup);
  }
  // Pebble: its ACME API over TLS, validating http-01 on the sandbox's HTTP port.
  write('/etc/pebble/cert.pem', pebbleTls.cert);
  write('/etc/pebble/key.pem', pebbleTls.key, 0o600);
  write(
    '/etc/pebble/pebble.json',
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${ports.acme}`,
        managementListenAddress: `127.0.0.1:${ports.acmeManagement}`,
        certificate: '/etc/pebble/cert.pem',
        privateKey: '/etc/pebble/key.pem',
        httpPort: ports.http,
        tlsPort: ports.https,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  // Postfix: Debian's main.cf and master.cf, its SMTP service on the sandbox's port, logging to its
  // output. The mail component (Berth's start) adds the rest.
  run([
    '/usr/sbin/postconf',
    '-e',
    `myhostname=${SANDBOX_HOST}`,
    'mydestination=localhost',
    'inet_interfaces=127.0.0.1',
    'inet_protocols=ipv4',
    'maillog_file=/dev/stdout',
    // Its SMTP port stands for a server's port 25 on the Internet: no client is trusted to relay.
    'mynetworks=',
    'relayhost=',
  ]);
  run(['/usr/sbin/postconf', '-MX', 'smtp/inet']);
  run([
    '/usr/sbin/postconf',
    '-M',
    `127.0.0.1:${ports.smtp}/inet=127.0.0.1:${ports.smtp} inet n - y - - smtpd`,
  ]);
  // Dovecot and OpenDKIM: their configuration is Berth's; the sandbox only logs them to a file.
  write('/etc/dovecot/local.conf', 'log_path = /dev/stderr\n');
  for (const [dir, owner] of [
    ['/run/opendkim', 'opendkim'],
    ['/run/dovecot', 'root'],
    ['/run/sshd', 'root'],
  ] as const) {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chownSync(
      dir,
      Number(run(['/usr/bin/id', '-u', owner]).toString()),
      Number(run(['/usr/bin/id', '-g', owner]).toString()),
    );
  }
  // sshd: host keys of its own; PAM's loginuid cannot be set inside a namespace, so it is optional.
  for (const name of readdirSync('/etc/ssh').filter((n) => n.startsWith('ssh_host_')))
    rmSync(join('/etc/ssh', name));
  run(['/usr/bin/ssh-keygen', '-A']);
  const pamSshd = readFileSync('/etc/pam.d/sshd', 'utf8');
  write(
    '/etc/pam.d/sshd',
    pamSshd.replace(/^session\s+required\s+pam_loginuid\.so/m, 'session optional pam_loginuid.so'),
  );
  // Berth: the linux driver on the sandbox's ports, certificates from Pebble. Its data directory
  // holds the store, the keys and the passwords: root's alone, as `berth init` makes it.
  mkdirSync(DATA_DIR, { recursive: true, mode: 0o700 });
  chmodSync(DATA_DIR, 0o700);
  write(
    join(DATA_DIR, 'berth.toml'),
    [
      "# The sandbox's Berth (berth sandbox): the linux driver on this throwaway system.",
      'driver = "linux"',
      'host = "127.0.0.1"',
      `port = ${ports.api}`,
      `reseller_port = ${ports.reseller}`,
      `host_name = "${SANDBOX_HOST}"`,
      'shared_ipv4 = "127.0.0.1"',
      'shared_ipv6 = ""',
      // The others of a fleet reach this one's admin listener on the loopback they all share.
      ...(fleet.node
        ? [`node_name = ${JSON.stringify(fleet.node)}`, `advertise_url = "https://127.0.0.1:${ports.api}"`]
        : []),
      ...(fleet.database ? [`database = ${JSON.stringify(fleet.database)}`] : []),
      // The billing system of the sandbox (its test, a developer's script) calls from 127.0.0.1,
      // as every account's code does: no account may lock it out by failing logins there.
      'trusted_addresses = ["127.0.0.1"]',
      '',
      '[linux]',
      `http_port = ${ports.http}`,
      `https_port = ${ports.https}`,
      `reload_dns = ["/usr/sbin/rndc", "-s", "127.0.0.1", "-p", "${ports.rndc}", "reload"]`,
      'mail_address = "127.0.0.1"',
      // The machine's cgroup hierarchies are shared: this sandbox's accounts have a parent of their own.
      `cgroup_parent = "${cgroupParent}"`,
      `imap_port = ${ports.imap}`,
      `submission_port = ${ports.submission}`,
      // SPF is checked with the sandbox's BIND, which serves the hosted zones (no outside DNS).
      `mail_dns_server = "127.0.0.1:${ports.dns}"`,
      '',
      '[acme]',
      `directory = "https://127.0.0.1:${ports.acme}/dir"`,
      'check_seconds = 1',
      '',
    ].join('\n'),
    0o600,
  );
}

function fetchText(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { ca }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => {
        body += chunk;
      });
      response.on('end', () =>
        response.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${response.statusCode}`)),
      );
    }).on('error', reject);
  });
}

/** A `berth` command on the data directory, under the umask Berth's own service runs with. */
function berth(args: string[], input: string): void {
  const umask = process.umask(0o077);
  try {
    execFileSync(process.execPath, [BIN, ...args, '--data-dir', DATA_DIR], {
      input,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
  } finally {
    process.umask(umask);
  }
}

/** Removes the control groups the sandbox's accounts had, and their parent, from the machine's hierarchies. */
async function removeControlGroups(parent: string): Promise<void> {
  const groups = accountGroups(detectLayout(parent));
  for (const user of groups.list()) await groups.remove(user);
  for (const dir of [groups.layout.unified, ...Object.values(groups.layout.v1)])
    if (dir && existsSync(dir)) rmdirSync(dir);
}

export async function runInside(dir: string, fleet: SandboxFleet = {}): Promise<number> {
  const services: Service[] = [];
  const cgroupParent = `berth-sandbox-${randomBytes(6).toString('hex')}`;
  let stopping: Promise<void> | null = null;
  let failed = false;
  const stopAll = (): Promise<void> => {
    stopping ??= (async () => {
      // Berth first, so that no call is cut by a service going away under it.
      const berthFirst = [...services]
        .reverse()
        .sort((a, b) => Number(b.name === 'Berth') - Number(a.name === 'Berth'));
      for (const service of berthFirst) {
        const child = service.child;
        if (!child || child.exitCode !== null || child.signalCode !== null) continue;
        child.kill(service.stop);
        const ended = new Promise((resolve) => child.once('exit', resolve));
        if ((await Promise.race([ended, sleep(15_000, 'late', { ref: false })])) === 'late')
          child.kill('SIGKILL');
      }
      await removeControlGroups(cgroupParent).catch((error: unknown) =>
        say(`control groups of ${cgroupParent} left: ${(error as Error).message}`),
      );
    })();
    return stopping;
  };
  // A signal, the input closing or a service dying asks for the stop; start-up checks for it.
  let stopWanted = false;
  let wake = () => {};
  const stopRequested = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const requestStop = () => {
    stopWanted = true;
    wake();
  };
  const onSignal = () => requestStop();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.stdin.on('end', onSignal);
  process.stdin.resume();
  // Once everything is stopped nothing may keep this process (the namespace's first) alive.
  const finish = (status: number) => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.stdin.destroy();
    return status;
  };

  const start = (service: Service, log: string) => {
    // The services' logs name every account (mail's senders and recipients): root's alone.
    mkdirSync('/var/log/sandbox', { recursive: true, mode: 0o700 });
    chmodSync('/var/log/sandbox', 0o700);
    const out = openSync(log, 'a', 0o600);
    // A child takes its umask from this process at spawn.
    const umask = process.umask(service.umask ?? 0o022);
    try {
      service.child = spawn(service.argv[0]!, service.argv.slice(1), {
        stdio: ['ignore', out, out],
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C', ...service.env },
      });
    } finally {
      process.umask(umask);
    }
    service.child.on('exit', (code, signal) => {
      if (stopping) return;
      failed = true;
      say(`${service.name} stopped (${signal ?? `exit ${code}`}); its log: ${log}`);
      try {
        process.stderr.write(readFileSync(log, 'utf8').split('\n').slice(-15).join('\n'));
      } catch {}
      requestStop();
    });
    services.push(service);
  };
  const waitUntil = async (what: string, ready: () => Promise<boolean> | boolean, seconds = 30) => {
    const deadline = Date.now() + seconds * 1000;
    while (!(await ready())) {
      if (stopWanted) throw new Error(`stopped while waiting for ${what}`);
      if (Date.now() > deadline) {
        const log = `/var/log/sandbox/${what.toLowerCase()}.log`;
        const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-15).join('\n') : '';
        throw new Error(
          `${what} did not start within ${seconds} s${tail ? `; the end of ${log}:\n${tail}` : ''}`,
        );
      }
      await sleep(50);
    }
  };

  try {
    const homes = attachHomes(dir);
    mountOverlays(join(dir, 'layers'));
    mountHomes(homes);
    // No account sees another's processes: this namespace's /proc shows each user only its own.
    run(['/usr/bin/mount', '-o', 'remount,hidepid=invisible', '/proc']);
    const ports: Ports = {
      api: await freePort(),
      reseller: await freePort(),
      http: await freePort(),
      https: await freePort(),
      dns: await freePort(),
      rndc: await freePort(),
      acme: await freePort(),
      acmeManagement: await freePort(),
      smtp: await freePort(),
      submission: await freePort(),
      imap: await freePort(),
      ssh: await freePort(),
    };
    const pebbleCa = await makeFallbackCa('Pebble listener');
    const pebbleTls = await issueFallback(pebbleCa, ['127.0.0.1', 'localhost']);
    const [chain, key] = pebbleTls.split(/(?=-----BEGIN PRIVATE KEY-----)/);
    configure(ports, cgroupParent, { cert: chain!, key: key! }, fleet);
    write('/etc/pebble/ca.pem', pebbleCa.certPem);

    start(
      { name: 'nginx', argv: ['/usr/sbin/nginx', '-g', 'daemon off;'], stop: 'SIGQUIT' },
      '/var/log/sandbox/nginx.log',
    );
    start(
      {
        name: 'BIND',
        argv: ['/usr/sbin/named', '-f', '-u', 'bind', '-c', '/etc/bind/named.conf'],
        stop: 'SIGTERM',
      },
      '/var/log/sandbox/named.log',
    );
    start(
      {
        name: 'Pebble',
        argv: [
          '/usr/bin/pebble',
          '-config',
          '/etc/pebble/pebble.json',
          '-dnsserver',
          `127.0.0.1:${ports.dns}`,
        ],
        env: { PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
        stop: 'SIGTERM',
      },
      '/var/log/sandbox/pebble.log',
    );
    await waitUntil('nginx', () => answers(ports.http));
    await waitUntil('BIND', () => answers(ports.dns));
    await waitUntil('Pebble', () => answers(ports.acme));

    const portalPassword = secret();
    const apiPassword = secret();
    berth(['admin', 'set-password', '--password-stdin'], portalPassword);
    berth(['api-user', 'create', apiUserOf(fleet), '--password-stdin'], apiPassword);
    start(
      {
        name: 'Berth',
        argv: [process.execPath, ...SERVE_NODE_FLAGS, BIN, 'serve', '--data-dir', DATA_DIR],
        env: { NODE_EXTRA_CA_CERTS: '/etc/pebble/ca.pem' },
        stop: 'SIGTERM',
        // As deploy/berth.service runs it: every mode Berth gives is its own, not the umask's.
        umask: 0o077,
      },
      '/var/log/sandbox/berth.log',
    );
    // Its first start builds the jail template (jailkit copies every library of the shell's tools
    // onto the homes' btrfs): minutes on a busy machine.
    await waitUntil('Berth', async () => (await answers(ports.api)) && (await answers(ports.reseller)), 600);
    // Mail and SSH read what Berth's mail and shell components wrote when it started.
    const mailServices: [Service, string, number | string][] = [
      [{ name: 'Postfix', argv: ['/usr/sbin/postfix', 'start-fg'], stop: 'SIGTERM' }, 'postfix', ports.smtp],
      [
        {
          name: 'Dovecot',
          argv: ['/usr/sbin/dovecot', '-F', '-c', '/etc/dovecot/dovecot.conf'],
          stop: 'SIGTERM',
        },
        'dovecot',
        ports.imap,
      ],
      [
        { name: 'OpenDKIM', argv: ['/usr/sbin/opendkim', '-f', '-x', '/etc/opendkim.conf'], stop: 'SIGTERM' },
        'opendkim',
        '/var/spool/postfix/opendkim/opendkim.sock',
      ],
      [
        {
          name: 'sshd',
          argv: ['/usr/sbin/sshd', '-D', '-e', '-p', String(ports.ssh), '-o', 'ListenAddress=127.0.0.1'],
          stop: 'SIGTERM',
        },
        'sshd',
        ports.ssh,
      ],
    ];
    for (const [service, log] of mailServices) start(service, `/var/log/sandbox/${log}.log`);
    for (const [service, , port] of mailServices)
      await waitUntil(service.name, () => (typeof port === 'number' ? answers(port) : existsSync(port)));
    await waitUntil('submission', () => answers(ports.submission));
    const acmeRoot = await fetchText(`https://127.0.0.1:${ports.acmeManagement}/roots/0`, pebbleCa.certPem);
    const ready = {
      api: `https://127.0.0.1:${ports.api}/`,
      reseller_api: `https://127.0.0.1:${ports.reseller}/`,
      api_user: apiUserOf(fleet),
      api_password: apiPassword,
      portal_password: portalPassword,
      http_port: ports.http,
      https_port: ports.https,
      dns_port: ports.dns,
      ssh_port: ports.ssh,
      smtp_port: ports.smtp,
      submission_port: ports.submission,
      imap_port: ports.imap,
      acme_root_pem: acmeRoot,
      fallback_ca_pem: readFileSync('/etc/berth/certs/fallback-ca.pem', 'utf8'),
    };
    process.stdout.write(`${JSON.stringify({ ready })}\n`);
  } catch (error) {
    if (!failed) say((error as Error).message);
    failed = true;
    await stopAll();
    return finish(1);
  }
  await stopRequested;
  await stopAll();
  return finish(failed ? 1 : 0);
}
