// The mail services each reload only when a change rewrote the tables they read.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { LinuxConfig } from '../../src/config/index.ts';
import type { LinuxContext } from '../../src/provision/linux/context.ts';
import { mailReloads } from '../../src/provision/linux/mail/reloads.ts';
import { CommandFailed, type CommandRunner } from '../../src/provision/linux/run.ts';
import { childrenOf, processName, waitFor } from '../../src/provision/linux/wait.ts';
import { streamsNothing, tempDir } from '../helpers.ts';

function reloads(failing?: string) {
  const ran: string[] = [];
  const runner: CommandRunner = {
    async run(argv) {
      ran.push(argv[0]!);
      if (argv[0] === failing) throw new CommandFailed(`${failing} failed`);
      return { stdout: '', stderr: '' };
    },
    stream: streamsNothing,
  };
  const linux = {
    reloadMail: ['/postfix'],
    reloadDkim: ['/opendkim'],
    postfixPidFile: '/nonexistent/master.pid',
  } as LinuxConfig;
  const ctx = { linux, runner, live: true, path: (p: string) => p } as unknown as LinuxContext;
  return { ran, ...mailReloads(ctx) };
}

describe('mail reloads', () => {
  it('reload the services whose tables changed, and only those', async () => {
    const mail = reloads();
    mail.tablesWritten(new Set(['opendkim']));
    await mail.service.reload();
    assert.deepEqual(mail.ran, ['/opendkim']);
    mail.ran.length = 0;
    mail.tablesWritten(new Set(['postfix']));
    mail.tablesWritten(new Set(['opendkim']));
    await mail.service.reload();
    assert.deepEqual(mail.ran, ['/postfix', '/opendkim']);
  });

  it('reload nothing when the tables were written as they were', async () => {
    const mail = reloads();
    mail.tablesWritten(new Set());
    await mail.service.reload();
    assert.deepEqual(mail.ran, []);
  });

  it('reload every service when nothing was written (recovery)', async () => {
    const mail = reloads();
    await mail.service.reload();
    assert.deepEqual(mail.ran, ['/postfix', '/opendkim']);
  });

  it('wait for the old processes that read the tables to end, and not for a busy queue manager', async () => {
    // A master (Perl, under the name) whose smtpd ends a moment after its SIGHUP, as an idle one
    // does, and whose queue manager, busy, ends 1.9 s after it: before the reload's wait would
    // give up (2 s), so a reload that waited for it would find it gone.
    const dir = tempDir('berth-postfix-');
    copyFileSync('/usr/bin/perl', join(dir, 'master'));
    for (const name of ['qmgr', 'smtpd']) copyFileSync('/usr/bin/sleep', join(dir, name));
    const master = spawn(
      join(dir, 'master'),
      [
        '-e',
        `my %kid; for my $name ('qmgr', 'smtpd') { my $pid = fork(); if (!$pid) { exec("${dir}/$name", '60'); } $kid{$name} = $pid; }
         $SIG{HUP} = sub { select(undef, undef, undef, 0.1); kill('TERM', $kid{smtpd}); waitpid($kid{smtpd}, 0);
                           select(undef, undef, undef, 1.8); kill('TERM', $kid{qmgr}); waitpid($kid{qmgr}, 0); };
         $| = 1; print "ready\n"; sleep 1 while 1;`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise((resolve) => master.stdout.once('data', resolve));
      await waitFor('the children', () => childrenOf(master.pid!).length === 2, 5_000);
      const pidFile = join(dir, 'master.pid');
      writeFileSync(pidFile, `${master.pid}\n`);
      const linux = {
        reloadMail: [],
        reloadDkim: [],
        postfixPidFile: pidFile,
      } as unknown as LinuxConfig;
      const runner: CommandRunner = { run: async () => ({ stdout: '', stderr: '' }), stream: streamsNothing };
      const mail = mailReloads({
        linux,
        runner,
        live: true,
        path: (p: string) => p,
      } as unknown as LinuxContext);
      mail.tablesWritten(new Set(['postfix']));
      await mail.service.reload();
      assert.deepEqual(childrenOf(master.pid!).map(processName), ['qmgr'], 'smtpd ended, qmgr still busy');
    } finally {
      for (const pid of childrenOf(master.pid!)) process.kill(pid, 'SIGKILL');
      master.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keep what a failed reload did not make live for the next one', async () => {
    const mail = reloads('/opendkim');
    mail.tablesWritten(new Set(['opendkim']));
    await assert.rejects(mail.service.reload(), /opendkim failed/);
    mail.ran.length = 0;
    await assert.rejects(mail.service.reload(), /opendkim failed/);
    assert.deepEqual(mail.ran, ['/opendkim']);
  });

  it('signal OpenDKIM from its pid file, and refuse a pid file naming another program', async () => {
    // Perl under each program's name, noting each signal it catches.
    const dir = tempDir('berth-mail-services-');
    const started = ['opendkim', 'other'].map((name) => {
      copyFileSync('/usr/bin/perl', join(dir, name));
      const child = spawn(
        join(dir, name),
        [
          '-e',
          `$| = 1; for my $s ('HUP', 'USR1') { $SIG{$s} = sub { print "$s\n" }; } print "ready\n"; sleep 1 while 1;`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let heard = '';
      child.stdout.on('data', (chunk) => {
        heard += String(chunk);
      });
      writeFileSync(join(dir, `${name}.pid`), `${child.pid}\n`);
      return { child, heard: () => heard };
    });
    const [opendkim, other] = started;
    const mail = (opendkimPid: string) =>
      mailReloads({
        linux: {
          reloadMail: [],
          reloadDkim: [],
          postfixPidFile: join(dir, 'none.pid'),
          opendkimPidFile: join(dir, opendkimPid),
        } as unknown as LinuxConfig,
        runner: { run: async () => assert.fail('no command is run') },
        live: true,
        path: (p: string) => p,
      } as unknown as LinuxContext);
    try {
      await waitFor('the programs', () => started.every((s) => s.heard() === 'ready\n'), 5_000);
      const right = mail('opendkim.pid');
      right.tablesWritten(new Set(['opendkim']));
      await right.service.reload();
      await waitFor('the signal', () => opendkim!.heard().includes('USR1'), 5_000);
      assert.equal(opendkim!.heard(), 'ready\nUSR1\n');
      // Its program replaced while it runs (a package upgrade): still OpenDKIM.
      rmSync(join(dir, 'opendkim'));
      right.tablesWritten(new Set(['opendkim']));
      await right.service.reload();
      await waitFor('the second signal', () => opendkim!.heard() === 'ready\nUSR1\nUSR1\n', 5_000);
      // A pid file naming a process of another program: nothing is signalled, the reload fails.
      const wrong = mail('other.pid');
      wrong.tablesWritten(new Set(['opendkim']));
      await assert.rejects(wrong.service.reload(), /is not OpenDKIM/);
      assert.equal(other!.heard(), 'ready\n');
    } finally {
      for (const { child } of started) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
