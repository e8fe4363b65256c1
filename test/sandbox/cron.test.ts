// Cron jobs in the sandbox (CONTRACT §14): a job added through the customer API runs within about a
// minute as the account's user, inside its jail (a shell account's own; for an account without a
// shell, one built like it), in its control group: it sees no other home and no /etc/shadow, and
// /home lists its own alone. A suspended account's job does not run; removal ends it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import { type RunningSandbox, sandboxCall, sandboxHolderCall, sandboxWithAccounts } from '../process.ts';

/**
 * What a job writes, each run appending a block, into its site directory, found from where the job
 * starts (the home, as SFTP shows it); `neighbour` is another account, whose site it must not see.
 */
const command = (neighbour: string) =>
  [
    'start=$PWD; cd public_html && {',
    'echo "user=$(id -un) start=$start pwd=$PWD";',
    'echo "home=$(ls /home | tr "\\n" " ")";',
    'if cat /etc/shadow >/dev/null 2>&1; then echo shadow=readable; else echo shadow=unreadable; fi;',
    `if ls /home/${neighbour}/public_html >/dev/null 2>&1; then echo neighbour=seen; else echo neighbour=unseen; fi;`,
    'echo "cgroup=$(cat /proc/self/cgroup | tr "\\n" " ")";',
    'echo "procs=$(ps -e -o user= | sort -u | tr "\\n" " ")";',
    'echo end; } >> cron-ran.txt',
  ].join(' ');

/** How many times a job has run, from what it wrote. */
const runs = (text: string) => text.split('end\n').length - 1;

describe('cron jobs, in the sandbox', () => {
  const dataDir = tempDir('berth-sandbox-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  /** An operation of the holder's side on the customer API, with the holder's password. */
  const asHolder = async (user: string, operation: string, params: Record<string, string> = {}) => {
    const password = `${user[0]!.toUpperCase()}${user.slice(1)}-pass-1234`;
    const reply = await sandboxHolderCall(sandbox, { user, password }, operation, params);
    return reply as { status: number; body: { data: { id: string }; info: string } };
  };
  /** What the account's job wrote into its public_html, read as root ('' when nothing yet). */
  const ran = async (user: string) =>
    (await running.exec(['/usr/bin/cat', `/home/${user}/public_html/cron-ran.txt`])).stdout;
  /** The job's output once it has run (cron starts jobs at the start of each minute). */
  const firstRun = async (user: string) => {
    for (let i = 0; i < 80; i++) {
      const text = await ran(user);
      if (text.includes('end\n')) return text;
      await sleep(1000);
    }
    assert.fail(`${user}'s job did not run within 80 seconds:\n${await running.log()}`);
  };

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'carol']);
    sandbox = running.info;
    const made = await sandboxCall(sandbox, 'createacct', {
      user: 'bob',
      domain: 'bob.example',
      email: 'bob@example.org',
      package: 'default',
      password: 'Bob-pass-1234',
      shell: '0',
    });
    assert.equal(made.status, 200, made.info);
  });
  after(() => {
    if (running.child.exitCode === null) running.child.kill('SIGKILL');
  });

  it("a job runs within a minute as the account's user, in its jail and control group, shell or none", async () => {
    for (const [user, neighbour] of [
      ['alice', 'bob'],
      ['bob', 'alice'],
      ['carol', 'alice'],
    ] as const) {
      const added = await asHolder(user, 'add_cron_job', {
        schedule: '* * * * *',
        command: command(neighbour),
      });
      assert.equal(added.status, 200, added.body.info);
    }
    for (const user of ['alice', 'bob', 'carol']) {
      const text = await firstRun(user);
      assert.match(text, new RegExp(`^user=${user} start=/ pwd=/public_html$`, 'm'), text);
      // Its own home alone under /home; no password hashes; no neighbour's site.
      assert.match(text, new RegExp(`^home=${user} $`, 'm'), text);
      assert.match(text, /^shadow=unreadable$/m, text);
      assert.match(text, /^neighbour=unseen$/m, text);
      assert.match(text, new RegExp(`^cgroup=.*/${user}\\b`, 'm'), text);
      // ps works, and shows the account's own processes alone.
      assert.match(text, new RegExp(`^procs=${user} $`, 'm'), text);
      const owner = await running.exec([
        '/usr/bin/stat',
        '-c',
        '%U',
        `/home/${user}/public_html/cron-ran.txt`,
      ]);
      assert.equal(owner.stdout.trim(), user);
    }
  });

  it('a suspended account’s job does not run, nor a removed one’s; unsuspension lets it run again', async () => {
    assert.equal((await sandboxCall(sandbox, 'suspendacct', { user: 'bob', reason: 'unpaid' })).status, 200);
    assert.equal((await sandboxCall(sandbox, 'removeacct', { user: 'carol' })).status, 200);
    await sleep(2000);
    const bob = await ran('bob');
    const alice = runs(await ran('alice'));
    // alice's job runs once more meanwhile, bob's does not.
    for (let i = 0; i < 70 && runs(await ran('alice')) === alice; i++) await sleep(1000);
    assert.ok(runs(await ran('alice')) > alice, 'alice’s job stopped');
    assert.equal(await ran('bob'), bob);
    const crons = (await running.exec(['/usr/bin/ls', '/etc/cron.d'])).stdout;
    assert.match(crons, /berth-alice/);
    assert.doesNotMatch(crons, /berth-(bob|carol)/);

    assert.equal((await sandboxCall(sandbox, 'unsuspendacct', { user: 'bob' })).status, 200);
    for (let i = 0; i < 70 && (await ran('bob')) === bob; i++) await sleep(1000);
    assert.ok(runs(await ran('bob')) > runs(bob), 'bob’s job did not run again');

    const listed = await asHolder('alice', 'list_cron_jobs');
    const [job] = listed.body.data as unknown as { id: string }[];
    assert.equal((await asHolder('alice', 'remove_cron_job', { id: job!.id })).status, 200);
    assert.doesNotMatch((await running.exec(['/usr/bin/ls', '/etc/cron.d'])).stdout, /berth-alice/);
  });
});
