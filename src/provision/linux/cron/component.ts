// The cron component: an account's cron jobs (CONTRACT §14) run by Debian's cron, never as cron's
// own per-user crontabs (which run with the host's whole view). Each account with jobs, while not
// suspended, has one root-owned file /etc/cron.d/berth-<user> whose lines run Berth's runner
// (cron-run.sh) as root with the account's user and a job's id, and nothing else from a request;
// its commands are in /etc/berth/cron/<user>, root's alone, one `<id> <command>` line each. The
// runner enters the account's control group and its jail and runs the command there as the
// account's user (docs/linux-driver.md, Cron jobs). Both files are written whole from the store's
// jobs at every change, and removed while the account is suspended and with the account.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cronFields } from '../../../core/cron.ts';
import type { Account } from '../../../store/accounts.ts';
import type { CronJob } from '../../../store/cron-jobs.ts';
import type { AccountObjects } from '../../../store/objects.ts';
import { CONFINE, writeConfine } from '../confine/confine.ts';
import type { Component, LinuxContext, LinuxStep } from '../context.ts';
import { makePrivateDirectory, readIfExists, writeFileAtomic } from '../files.ts';
import { JAIL_ENTRIES, SHELL_GROUP, SUSPENDED_GROUP } from '../shell/component.ts';
import { render } from '../templates.ts';

/** Debian's cron reads every file here whose name is letters, digits, - and _. */
export const CRON_DIR = '/etc/cron.d';
/** The accounts' commands, `<user>` each: root's alone. */
export const CRON_JOBS_DIR = '/etc/berth/cron';
export const CRON_RUNNER = '/etc/berth/cron-run';
/** Where the runner builds a shell=off account's jail, in a mount namespace of the run's own. */
const JAIL_ROOT = '/run/berth/cron-jail';

export const cronFile = (user: string) => join(CRON_DIR, `berth-${user}`);
export const jobsFile = (user: string) => join(CRON_JOBS_DIR, user);

/** /etc/cron.d/berth-<user>: the account's jobs' schedules, each running the runner with its id. */
export function cronTable(user: string, jobs: readonly CronJob[]): string {
  return [
    `# Berth: the cron jobs of ${user} (docs/linux-driver.md, Cron jobs). Written whole by Berth.`,
    'SHELL=/bin/sh',
    'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
    'MAILTO=""',
    ...jobs.map((job) => `${cronFields(job.schedule)} root ${CRON_RUNNER} run ${user} ${job.id}`),
    '',
  ].join('\n');
}

/** /etc/berth/cron/<user>: each job's command, after its id. */
export function jobsTable(jobs: readonly CronJob[]): string {
  return jobs.map((job) => `${job.id} ${job.command}\n`).join('');
}

export function cronComponent(ctx: LinuxContext): Component {
  const { linux } = ctx;
  const jobsOf = (objects?: AccountObjects) => objects?.cron_jobs ?? [];

  /** The account's two files as `jobs` make them (none for no jobs, or while it is suspended). */
  const write = (account: Account, jobs: readonly CronJob[], removing = false): LinuxStep[] => {
    const runs = !removing && account.suspension === null && jobs.length > 0;
    const keeps = !removing && jobs.length > 0;
    return [
      // Made: the commands, then the schedule that runs them. Taken away: the schedule first.
      ...(keeps
        ? [ctx.fileStep('cron jobs', ctx.path(jobsFile(account.user)), 0o600, () => jobsTable(jobs))]
        : []),
      ctx.fileStep('cron schedule', ctx.path(cronFile(account.user)), 0o600, () =>
        runs ? cronTable(account.user, jobs) : null,
      ),
      ...(keeps ? [] : [ctx.fileStep('cron jobs', ctx.path(jobsFile(account.user)), 0o600, () => null)]),
    ];
  };
  /** Whether the account has either file (a step is needed to take it away). */
  const hasFiles = (user: string) =>
    existsSync(ctx.path(cronFile(user))) || existsSync(ctx.path(jobsFile(user)));
  const sameJobs = (a: readonly CronJob[], b: readonly CronJob[]) =>
    a.length === b.length &&
    a.every((job, i) => jobsTable([job]) === jobsTable([b[i]!]) && job.schedule === b[i]!.schedule);

  function runner(): string {
    const enter = (ctx.groups?.parents ?? []).map((dir) => `  echo "$$" >"${dir}/$user/cgroup.procs"`);
    return render(
      'cron/cron-run.sh',
      {
        jobs_dir: CRON_JOBS_DIR,
        suspended_group: SUSPENDED_GROUP,
        shell_group: SHELL_GROUP,
        jail_template: linux.jailTemplate,
        jail_root: JAIL_ROOT,
        mariadb_dir: dirname(linux.mariadbSocket),
        confine: CONFINE,
      },
      { enter_groups: enter.length > 0 ? enter.join('\n') : '  :', jail_entries: JAIL_ENTRIES.join(' ') },
    );
  }

  return {
    name: 'cron',

    async prepare() {
      makePrivateDirectory(ctx.path(CRON_JOBS_DIR));
      writeConfine(ctx.path(CONFINE), ctx.config.shell);
      const content = runner();
      if (readIfExists(ctx.path(CRON_RUNNER)) !== content)
        writeFileAtomic(ctx.path(CRON_RUNNER), content, 0o700);
    },

    create: (account, _origin, objects) =>
      jobsOf(objects).length > 0 ? write(account, jobsOf(objects)) : [],
    suspend: (account, objects) => (jobsOf(objects).length > 0 ? write(account, jobsOf(objects)) : []),
    unsuspend: (account, objects) => (jobsOf(objects).length > 0 ? write(account, jobsOf(objects)) : []),
    remove: (account) => (hasFiles(account.user) ? write(account, [], true) : []),
    changeObjects(account, before, after) {
      return sameJobs(jobsOf(before), jobsOf(after)) ? [] : write(account, jobsOf(after));
    },

    async reconcile(account, objects) {
      for (const step of write(account, jobsOf(objects))) await step.run();
    },

    async purge(account) {
      for (const step of write(account, [], true)) await step.run();
    },

    inspect(accounts) {
      const differences: string[] = [];
      const known = new Set(accounts.map((a) => a.user));
      for (const account of accounts) {
        const schedule = readIfExists(ctx.path(cronFile(account.user)));
        if (schedule !== null && account.suspension !== null)
          differences.push(
            `${account.user}: suspended, but its cron jobs are scheduled (${cronFile(account.user)})`,
          );
      }
      const real = ctx.path(CRON_DIR);
      if (existsSync(real))
        for (const name of readdirSync(real))
          if (name.startsWith('berth-') && !known.has(name.slice('berth-'.length)))
            differences.push(
              `${name.slice('berth-'.length)}: cron file ${join(CRON_DIR, name)} with no account in the store`,
            );
      return differences;
    },
  };
}
