// A MariaDB server of a test's own: a fresh data directory, no network, its socket where the linux
// driver looks for it below a throwaway system root (/run/mysqld/mysqld.sock), root by unix_socket.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers.ts';
import { type LinuxHarness, linuxSetup } from './system-root.ts';

export interface TestMariadb {
  socket: string;
  /** Runs SQL as root (or as `user` with `password`), answering the rows tab-separated. */
  sql(statements: string, as?: { user: string; password: string; database?: string }): string;
  stop(): Promise<void>;
}

export async function startMariadb(root: string): Promise<TestMariadb> {
  const dir = tempDir('berth-mariadb-');
  const data = join(dir, 'data');
  mkdirSync(join(root, 'run/mysqld'), { recursive: true });
  const socket = join(root, 'run/mysqld/mysqld.sock');
  execFileSync(
    '/usr/bin/mariadb-install-db',
    [
      '--no-defaults',
      `--datadir=${data}`,
      '--user=root',
      '--auth-root-authentication-method=socket',
      '--skip-test-db',
    ],
    { stdio: 'pipe' },
  );
  const server = spawn(
    '/usr/sbin/mariadbd',
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${socket}`,
      '--skip-networking',
      '--user=root',
      `--pid-file=${join(dir, 'pid')}`,
      `--log-error=${join(dir, 'error.log')}`,
      '--innodb-buffer-pool-size=16M',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => server.on('exit', () => resolve()));
  for (let i = 0; i < 300 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 100));
  if (!existsSync(socket)) throw new Error('mariadbd did not start');
  const sql: TestMariadb['sql'] = (statements, as) =>
    execFileSync(
      '/usr/bin/mariadb',
      [
        '--no-defaults',
        `--socket=${socket}`,
        `--user=${as?.user ?? 'root'}`,
        '--batch',
        '--skip-column-names',
        ...(as?.database ? [as.database] : []),
      ],
      // The password in the environment, as a test's own client: never on a command line.
      {
        input: statements,
        stdio: 'pipe',
        encoding: 'utf8',
        env: { ...process.env, ...(as && { MYSQL_PWD: as.password }) },
      },
    );
  return {
    socket,
    sql,
    async stop() {
      server.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The linux driver in a throwaway root with a MariaDB of its own, stopped when the suite closes. */
export async function linuxWithMariadb(): Promise<LinuxHarness & { mariadb: TestMariadb }> {
  let started: Promise<TestMariadb> | null = null;
  const harness = await linuxSetup((root) => {
    started = startMariadb(root);
  });
  const mariadb = await started!;
  return {
    ...harness,
    mariadb,
    close: async () => {
      await mariadb.stop();
      await harness.close();
    },
  };
}
