// A throwaway system root for the linux driver's tests, and nginx's own check of what is in it.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers.ts';

/** A root with a copy of this machine's user database and the directories the driver writes. */
export function makeSystemRoot(): string {
  const root = tempDir('berth-root-');
  mkdirSync(join(root, 'etc'), { recursive: true });
  for (const file of ['passwd', 'group', 'shadow', 'gshadow', 'login.defs']) {
    if (existsSync(`/etc/${file}`)) copyFileSync(`/etc/${file}`, join(root, 'etc', file));
  }
  for (const dir of [
    'home',
    'etc/nginx/sites-enabled',
    'etc/bind/zones',
    'etc/berth/dkim',
    'var/log/nginx',
    'run',
  ]) {
    mkdirSync(join(root, dir), { recursive: true });
  }
  writeFileSync(
    join(root, 'etc/nginx/nginx.conf'),
    [
      `pid ${root}/run/nginx.pid;`,
      `error_log ${root}/var/log/nginx/error.log;`,
      'events {}',
      `http { access_log off; include ${root}/etc/nginx/sites-enabled/*.conf; }`,
      '',
    ].join('\n'),
  );
  return root;
}

export function nginxAccepts(root: string): void {
  execFileSync('/usr/sbin/nginx', ['-t', '-q', '-c', join(root, 'etc/nginx/nginx.conf'), '-p', root], {
    stdio: 'pipe',
  });
}

export function linuxSettings(root: string, httpPort: number) {
  return {
    sharedIpv4: '127.0.0.1',
    sharedIpv6: '',
    ipPool: { ipv4: ['127.0.0.10'], ipv6: ['::1'] },
    linux: { systemRoot: root, httpPort },
  };
}
