// `berth init`: prepares a data directory for a server: the directory itself (0700), a commented
// berth.toml (0600), the TLS certificate (key 0600), and the portal password, shown once. What
// exists already is left as it is.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './config.ts';
import { ensurePortalPassword } from './portal-password.ts';
import { createLogger, openServices } from './services.ts';
import { loadCertificate } from './tls.ts';

const TEMPLATE = `# Berth's configuration; every key is described in docs/configuration.md.
# Uncomment and change what this server needs.

# host_name = "panel.example.net"
# shared_ipv4 = "203.0.113.10"
# shared_ipv6 = "2001:db8::10"
# nameservers = ["ns1.example.net", "ns2.example.net"]
# home_base = "/home"
# shell = "/bin/bash"
# trusted_proxies = []

# [ip_pool]
# ipv4 = []
# ipv6 = []

# [tls]
# cert = "/etc/ssl/berth/fullchain.pem"
# key = "/etc/ssl/berth/privkey.pem"

# [limits]
# header_timeout = 10
# request_timeout = 30
# keep_alive_timeout = 30
# max_connections = 2000

# [lockout]
# max_failures = 10
# window_minutes = 15
# lock_minutes = 15

# [linux]
# nginx_dir = "/etc/nginx/sites-enabled"
# zone_dir = "/etc/bind/zones"
# http_port = 80
# quota_filesystem = "/home"
`;

/** Returns the lines to show the administrator. */
export async function initDataDir(config: Config): Promise<string[]> {
  const lines: string[] = [];
  const { dataDir } = config;
  if (!existsSync(dataDir)) lines.push(`Created ${dataDir}`);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  const toml = join(dataDir, 'berth.toml');
  if (!existsSync(toml)) {
    writeFileSync(toml, TEMPLATE, { mode: 0o600 });
    lines.push(`Wrote ${toml} (every setting commented out: edit what this server needs)`);
  }
  if (config.tls && !config.tlsCert && !existsSync(join(dataDir, 'tls', 'cert.pem'))) {
    await loadCertificate(config);
    lines.push(`Made a self-signed certificate for ${config.hostName} in ${join(dataDir, 'tls')}`);
  }
  const services = await openServices(config, { cryptThreads: 1, log: createLogger('warn') });
  try {
    const password = await ensurePortalPassword(services.store.db, services.crypt);
    lines.push(
      `Store ready: ${services.store.dialect === 'sqlite' ? join(dataDir, 'berth.db') : 'PostgreSQL'}`,
    );
    if (password)
      lines.push(
        `Portal password for root (shown once; change it with "berth admin set-password"): ${password}`,
      );
  } finally {
    await services.close();
  }
  return lines;
}
