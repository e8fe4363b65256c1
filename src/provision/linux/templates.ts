// The files components write (server blocks, pools, zones), rendered from the template files in
// each component's folder. Every placeholder is `{{name}}`; docs/linux-driver.md lists them. A placeholder without a value, or a
// value that could break out of its line, is an error, never an empty string.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const DIR = import.meta.dirname;
const cache = new Map<string, string>();

export type TemplateName =
  | 'web/http.conf'
  | 'web/logrotate.conf'
  | 'web/sites.conf'
  | 'web/site-server.conf'
  | 'web/site.conf'
  | 'web/tls.conf'
  | 'web/redirect.conf'
  | 'web/php-location.conf'
  | 'php/pool.conf'
  | 'dns/zone.db'
  | 'mail/dovecot.conf'
  | 'mail/opendkim.conf'
  | 'shell/sshd.conf'
  | 'shell/account-session.sh'
  | 'shell/pam-sshd.conf'
  | 'cron/cron-run.sh'
  | 'ftp/pure-ftpd.conf'
  | 'ftp/pam-ftp.conf'
  | 'webmail/config.inc.php'
  | 'webmail/pool.conf'
  | 'webmail/nginx.conf'
  | 'confine/confine.pl';

/** Values rendered as they are; `blocks` may span lines (they are built by the driver itself). */
export function render(
  name: TemplateName,
  values: Record<string, string>,
  blocks: Record<string, string> = {},
): string {
  let template = cache.get(name);
  if (template === undefined) {
    template = readFileSync(join(DIR, name), 'utf8');
    cache.set(name, template);
  }
  return template.replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    if (key in blocks) return blocks[key]!;
    const value = values[key];
    if (value === undefined) throw new Error(`template ${name}: no value for {{${key}}}`);
    if (/[\s;{}"'\\$]/.test(value)) throw new Error(`template ${name}: unsafe value for {{${key}}}`);
    return value;
  });
}
