// `berth init`: prepares a data directory for a server: the directory itself (0700), a berth.toml
// (0600) listing every setting, the TLS certificate (key 0600), and the portal password, shown
// once; with --driver linux, what the system's services must include. What exists is left as it is.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePortalPassword, portalPasswordNotice } from '../auth/portal-password.ts';
import { type Config, configTemplate } from '../config/index.ts';
import { loadCertificate } from '../http/tls.ts';
import { createLogger, openServices } from '../services.ts';

/**
 * What the system's own configuration must hold for the linux driver's files to take effect, each
 * checked: the lines to show, empty when Debian's defaults already do it.
 */
function linuxStackSteps(config: Config): string[] {
  const { linux } = config;
  const root = (path: string) => join(linux.systemRoot, path);
  const readIfPresent = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');
  const holds = (file: string, text: string) => readIfPresent(root(file)).includes(text);
  const steps: string[] = [];
  if (
    linux.components.includes('dns') &&
    !/allow-new-zones\s+yes/.test(readIfPresent(root('/etc/bind/named.conf.options')))
  )
    steps.push(
      'BIND: add  allow-new-zones yes;  to the options in /etc/bind/named.conf.options, then: rndc reconfig',
    );
  if (linux.components.includes('web') && !holds('/etc/nginx/nginx.conf', `include ${linux.nginxDir}/*`))
    steps.push(`nginx: its http block must read ${linux.nginxDir}/* (Debian's nginx.conf does)`);
  if (linux.components.includes('php'))
    steps.push(
      `PHP-FPM: Berth starts a master for every account itself (${linux.phpFpm}); Debian's own php-fpm service may stay for other sites, or be stopped`,
    );
  if (linux.components.includes('mail'))
    steps.push(
      'Postfix, Dovecot, OpenDKIM: Berth writes their settings at its first start; then run: systemctl restart dovecot opendkim && systemctl reload postfix',
    );
  return steps;
}

/** Returns the lines to show the administrator. */
export async function initDataDir(config: Config): Promise<string[]> {
  const lines: string[] = [];
  const { dataDir } = config;
  if (!existsSync(dataDir)) lines.push(`Created ${dataDir}`);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  const toml = join(dataDir, 'berth.toml');
  if (!existsSync(toml)) {
    writeFileSync(toml, configTemplate(config, config.driver === 'linux' ? ['driver'] : []), { mode: 0o600 });
    chmodSync(toml, 0o600);
    lines.push(
      config.driver === 'linux'
        ? `Wrote ${toml} for the linux driver (every other setting commented out: edit what this server needs)`
        : `Wrote ${toml} (every setting commented out: edit what this server needs)`,
    );
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
    if (password) lines.push(portalPasswordNotice(password));
  } finally {
    await services.close();
  }
  if (config.driver === 'linux') {
    const steps = linuxStackSteps(config);
    if (steps.length > 0)
      lines.push(
        'Before serving, the system must read what Berth writes:',
        ...steps.map((step) => `  ${step}`),
      );
  }
  return lines;
}
