// The mail services each reload only when a change rewrote the tables they read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LinuxConfig } from '../../src/config/index.ts';
import type { LinuxContext } from '../../src/provision/linux/context.ts';
import { mailReloads } from '../../src/provision/linux/mail/reloads.ts';
import { CommandFailed, type CommandRunner } from '../../src/provision/linux/run.ts';

function reloads(failing?: string) {
  const ran: string[] = [];
  const runner: CommandRunner = {
    async run(argv) {
      ran.push(argv[0]!);
      if (argv[0] === failing) throw new CommandFailed(`${failing} failed`);
      return { stdout: '', stderr: '' };
    },
  };
  const linux = {
    reloadMail: ['/postfix'],
    reloadImap: ['/doveadm'],
    reloadDkim: ['/opendkim'],
    postfixPidFile: '/nonexistent/master.pid',
  } as LinuxConfig;
  const ctx = { linux, runner, live: true, path: (p: string) => p } as unknown as LinuxContext;
  return { ran, ...mailReloads(ctx) };
}

describe('mail reloads', () => {
  it('reload the services whose tables changed, and only those', async () => {
    const mail = reloads();
    mail.tablesWritten(new Set(['dovecot']));
    await mail.service.reload();
    assert.deepEqual(mail.ran, ['/doveadm']);
    mail.ran.length = 0;
    mail.tablesWritten(new Set(['postfix', 'opendkim']));
    mail.tablesWritten(new Set(['dovecot']));
    await mail.service.reload();
    assert.deepEqual(mail.ran, ['/postfix', '/doveadm', '/opendkim']);
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
    assert.deepEqual(mail.ran, ['/postfix', '/doveadm', '/opendkim']);
  });

  it('keep what a failed reload did not make live for the next one', async () => {
    const mail = reloads('/doveadm');
    mail.tablesWritten(new Set(['dovecot']));
    await assert.rejects(mail.service.reload(), /doveadm failed/);
    mail.ran.length = 0;
    await assert.rejects(mail.service.reload(), /doveadm failed/);
    assert.deepEqual(mail.ran, ['/doveadm']);
  });
});
