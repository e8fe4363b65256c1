// backup_environment_file (docs/backups.md): the credentials of a repository elsewhere reach restic
// in its environment, never on its command line; a file others could read, or a name that is not a
// storage credential (PATH, LD_PRELOAD, HOME, Berth's own RESTIC_PASSWORD…), is refused, at start-up
// and by `berth doctor`, without its values in the message.
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { backupEnvironmentProblem, readBackupEnvironment } from '../../src/config/backup-environment.ts';
import { ConfigError, loadConfig } from '../../src/config/index.ts';
import { resticRepository } from '../../src/provision/linux/backup/restic.ts';
import { type CommandRunner, execRunner, streamCommand } from '../../src/provision/linux/run.ts';
import { streamsNothing, tempDir } from '../helpers.ts';

const SECRET = 'wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY';

function envFile(dir: string, text: string, mode = 0o600): string {
  const path = join(dir, 'backup.env');
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

describe('backup_environment_file', () => {
  it('reads KEY=VALUE lines of storage credentials, comments and blank lines aside', () => {
    const dir = tempDir();
    const path = envFile(
      dir,
      `# the bucket's keys\nAWS_ACCESS_KEY_ID=AKIDEXAMPLE\nAWS_SECRET_ACCESS_KEY=${SECRET}\n\nB2_ACCOUNT_ID=a=b\n`,
    );
    assert.deepEqual(readBackupEnvironment(path), {
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: SECRET,
      B2_ACCOUNT_ID: 'a=b',
    });
    assert.deepEqual(readBackupEnvironment(null), {});
  });

  it('refuses a file group or others can read, naming the mode, not the values', () => {
    const dir = tempDir();
    for (const mode of [0o644, 0o640, 0o604]) {
      const path = envFile(dir, `AWS_SECRET_ACCESS_KEY=${SECRET}\n`, mode);
      assert.throws(
        () => readBackupEnvironment(path),
        (error: Error) => error instanceof ConfigError && /lets others read it/.test(error.message),
      );
      const config = loadConfig({ dataDir: dir, backup: { environmentFile: path } });
      const problem = backupEnvironmentProblem(config);
      assert.match(problem ?? '', /backup_environment_file .* mode 0/);
      assert.ok(!problem!.includes(SECRET));
    }
    assert.throws(() => readBackupEnvironment(join(dir, 'missing.env')), /ENOENT/);
  });

  it('refuses names that are not credentials of restic and its back ends, and Berth’s own', () => {
    const dir = tempDir();
    for (const line of [
      'PATH=/tmp/evil',
      'LD_PRELOAD=/tmp/evil.so',
      'HOME=/root',
      'TMPDIR=/tmp',
      'RESTIC_PASSWORD=guess',
      'RESTIC_PASSWORD_COMMAND=/bin/sh',
      'RESTIC_REPOSITORY=/tmp/other',
      'aws_access_key_id=x',
      `just ${SECRET}`,
    ]) {
      const path = envFile(dir, `AWS_ACCESS_KEY_ID=AKIDEXAMPLE\n${line}\n`);
      assert.throws(
        () => readBackupEnvironment(path),
        (error: Error) =>
          error instanceof ConfigError && /line 2/.test(error.message) && !error.message.includes(SECRET),
        line,
      );
    }
    const twice = envFile(dir, 'AWS_ACCESS_KEY_ID=a\nAWS_ACCESS_KEY_ID=b\n');
    assert.throws(() => readBackupEnvironment(twice), /set twice/);
  });

  it('hands the values to every restic run in its environment, never in its argv', async () => {
    const dir = tempDir();
    const path = envFile(dir, `AWS_ACCESS_KEY_ID=AKIDEXAMPLE\nAWS_SECRET_ACCESS_KEY=${SECRET}\n`);
    const config = loadConfig({
      dataDir: dir,
      backup: { repository: 's3:s3.example.net/berth', environmentFile: path },
    });
    const runs: { argv: readonly string[]; env: Readonly<Record<string, string>> | undefined }[] = [];
    const runner: CommandRunner = {
      async run(argv, options = {}) {
        runs.push({ argv, env: options.env });
        return { stdout: '[]', stderr: '' };
      },
      stream: streamsNothing,
    };
    const repository = resticRepository(config, runner);
    assert.deepEqual(await repository.snapshots(['user:bella']), []);
    await repository.check();
    assert.equal(runs.length, 2);
    for (const { argv, env } of runs) {
      assert.equal(argv[0], '/usr/bin/restic');
      assert.ok(argv.includes('s3:s3.example.net/berth'));
      assert.ok(!argv.some((arg) => arg.includes(SECRET) || arg.includes('AKIDEXAMPLE')));
      assert.equal(env?.AWS_SECRET_ACCESS_KEY, SECRET);
      assert.equal(env?.AWS_ACCESS_KEY_ID, 'AKIDEXAMPLE');
    }
    // A file made readable since is refused at the next run, before restic starts.
    chmodSync(path, 0o644);
    await assert.rejects(repository.snapshots(['user:bella']), /lets others read it/);
    assert.equal(runs.length, 2);
  });

  it('the runner gives a command exactly that environment, PATH and LANG being Berth’s', async () => {
    const env = { AWS_SECRET_ACCESS_KEY: SECRET };
    const { stdout } = await execRunner().run(['/usr/bin/env'], { env });
    assert.deepEqual(stdout.trim().split('\n').sort(), [
      `AWS_SECRET_ACCESS_KEY=${SECRET}`,
      'LANG=C',
      'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
    ]);
    const streamed = streamCommand(['/usr/bin/env'], undefined, env);
    const chunks: Buffer[] = [];
    for await (const chunk of streamed.output) chunks.push(chunk as Buffer);
    await streamed.done;
    assert.match(Buffer.concat(chunks).toString(), new RegExp(`^AWS_SECRET_ACCESS_KEY=${SECRET}$`, 'm'));
  });
});
