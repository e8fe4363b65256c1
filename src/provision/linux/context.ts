// What every component of the linux driver works with: the configuration, the system root, the one
// command runner, and the step builders. A step may name the service that must reload for its
// change to take effect; the driver reloads each such service once, after the last step.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config, LinuxComponentName, LinuxConfig } from '../../config/index.ts';
import type { Account } from '../../store/accounts.ts';
import { MAIN_DOCROOT } from '../../store/domains.ts';
import type { AccountObjects } from '../../store/objects.ts';
import type { MovedAccount, Step } from '../driver.ts';
import { type AccountGroups, accountGroups, detectLayout } from './cgroups.ts';
import { readIfExists, restoreFile, under } from './files.ts';
import { ensureDirectory } from './home.ts';
import { findSystemUser, type SystemUser } from './passwd.ts';
import type { CommandRunner } from './run.ts';

/** A system service a component's files are read by (nginx, PHP-FPM, BIND). */
export interface Service {
  name: string;
  /** Makes the service read its files again, and returns once it serves what they say. */
  reload(): Promise<void>;
  /**
   * Runs `write`, a change to the service's files, never while the service reads them (a reload):
   * PHP-FPM that lists its pools and then finds one gone fails to start again. Answers what `write`
   * answered and the number of the reload that will read the change (see reloadCarrying). Set by
   * coalesceReloads.
   */
  writing?<T>(write: () => Promise<T>): Promise<Written<T>>;
  /**
   * Returns once reload number `carriedBy` has ended, or a later one (each reads every change
   * written before it began); starts one if none under way will. Set by coalesceReloads.
   */
  reloadCarrying?(carriedBy: number): Promise<void>;
}

/** A write to a service's files, and the reload that will read it. */
export interface Written<T> {
  result: T;
  carriedBy: number;
}

/**
 * How long a reload waiting for the writes under way lets later writes go first. A write takes
 * milliseconds and the reload then carries it too, so a burst's changes share one reload instead
 * of each waiting for the next; past this, later writes queue behind it and cannot starve it.
 */
const WRITES_MAY_PASS_MS = 200;

/** Many holders at once (writers of a service's files) or one alone (its reload), in turn. */
class SharedLock {
  #shared = 0;
  #exclusive = false;
  readonly #waiting: { exclusive: boolean; since: number; go: () => void }[] = [];

  async run<T>(exclusive: boolean, act: () => Promise<T>): Promise<T> {
    if (this.#free(exclusive) && (this.#waiting.length === 0 || (!exclusive && this.#passable())))
      this.#take(exclusive);
    else await new Promise<void>((go) => this.#waiting.push({ exclusive, since: Date.now(), go }));
    try {
      return await act();
    } finally {
      if (exclusive) this.#exclusive = false;
      else this.#shared--;
      // In order of asking: a reload waiting is not passed by writers queued after it.
      while (this.#waiting.length > 0 && this.#free(this.#waiting[0]!.exclusive)) {
        const next = this.#waiting.shift()!;
        this.#take(next.exclusive);
        next.go();
      }
    }
  }

  /** Whether a write may go before everything waiting: no reload has waited WRITES_MAY_PASS_MS. */
  #passable(): boolean {
    const now = Date.now();
    return this.#waiting.every((w) => !w.exclusive || now - w.since < WRITES_MAY_PASS_MS);
  }

  #free(exclusive: boolean): boolean {
    return !this.#exclusive && (!exclusive || this.#shared === 0);
  }

  #take(exclusive: boolean): void {
    if (exclusive) this.#exclusive = true;
    else this.#shared++;
  }
}

/**
 * Makes a service's reloads shared: one runs at a time, numbered in turn. A write to the service's
 * files learns the number of the reload that will read it, the next to begin, since a reload waits
 * for the writes under way (see Service.writing) and they for it; a write asked for while a reload
 * waits to begin goes first for a while (WRITES_MAY_PASS_MS). Its caller then waits for that
 * reload alone: a burst of changes written while one reload runs is carried by the next, all of it.
 * A caller that wrote nothing through `writing` waits for the first reload that begins after it asks.
 */
export function coalesceReloads(service: Service, started: () => void = () => {}): void {
  const reload = service.reload.bind(service);
  const lock = new SharedLock();
  /** Reloads that have begun reading the files; the one under way (or waiting to begin) is `running`. */
  let begun = 0;
  let succeeded = 0;
  let running: { number: number; done: Promise<void> } | null = null;
  let next: Promise<void> | null = null;
  const start = (): Promise<void> => {
    const number = begun + 1;
    const done = lock
      .run(true, () => {
        begun = number;
        started();
        return reload();
      })
      .then(() => {
        succeeded = Math.max(succeeded, number);
      })
      .finally(() => {
        if (running?.done === done) running = null;
      });
    running = { number, done };
    return done;
  };
  service.reload = () => {
    if (!running) return start();
    next ??= running.done
      .catch(() => {})
      .then(() => {
        next = null;
        return start();
      });
    return next;
  };
  service.reloadCarrying = (carriedBy) => {
    if (carriedBy <= succeeded) return Promise.resolve();
    if (running && running.number >= carriedBy) return running.done;
    return service.reload();
  };
  // Under the shared lock no reload runs, so the next to begin reads the change.
  service.writing = (write) => lock.run(false, async () => ({ result: await write(), carriedBy: begun + 1 }));
}

export interface LinuxStep extends Step {
  reloads?: Service;
}

export interface LinuxContext {
  config: Config;
  linux: LinuxConfig;
  /** The system root: `/` on a real server. */
  root: string;
  /** Whether the root is `/`: only then are services reloaded and system-wide commands run. */
  live: boolean;
  /** `--prefix ROOT` for the shadow tools, or nothing at `/`. */
  prefix: string[];
  /** A path of the system (`/etc/…`) as a real path below the root. */
  path(p: string): string;
  runner: CommandRunner;
  /** The accounts' control groups; null below another system root or without cgroups. */
  groups: AccountGroups | null;
  hashPassword(password: string): Promise<string>;
  /** The system user of this name; an error when the user database does not have it. */
  systemUser(name: string): SystemUser;
  /** Makes `<homedir>/<components…>` a directory of the account's own (never through a link). */
  accountDirectory(account: Account, components: readonly string[], mode: number): void;
  step(name: string, run: () => Promise<void>, undo?: () => Promise<void>, reloads?: Service): LinuxStep;
  /** Writes a file (or removes it: content null) as a step whose undo puts back what was there. */
  fileStep(
    name: string,
    file: string,
    mode: number,
    content: () => string | null,
    reloads?: Service,
  ): LinuxStep;
}

export function linuxContext(
  config: Config,
  runner: CommandRunner,
  hashPassword: (password: string) => Promise<string>,
  failAt?: () => string | null,
): LinuxContext {
  const { linux } = config;
  const root = linux.systemRoot;
  const live = root === '/';
  const layout = live ? accountGroups(detectLayout(linux.cgroupParent)) : null;
  const groups = layout?.available ? layout : null;
  const systemUser = (name: string): SystemUser => {
    const found = findSystemUser(root, name);
    if (!found) throw new Error(`${name} is not in ${under(root, '/etc/passwd')}`);
    return found;
  };
  const step: LinuxContext['step'] = (name, run, undo = async () => {}, reloads) => ({
    name,
    run: async () => {
      if (failAt?.() === name) throw new Error(`failure injected at ${name}`);
      await run();
    },
    undo,
    ...(reloads && { reloads }),
  });
  return {
    config,
    linux,
    root,
    live,
    prefix: live ? [] : ['--prefix', root],
    path: (p) => under(root, p),
    runner,
    groups,
    hashPassword,
    systemUser,
    accountDirectory(account, components, mode) {
      const owner = systemUser(account.user);
      if (ensureDirectory(under(root, account.homedir), components, owner, mode) !== 'directory')
        throw new Error(`${join(account.homedir, ...components)} is not a directory`);
    },
    step,
    fileStep(name, file, mode, content, reloads) {
      let before: string | null = null;
      return step(
        name,
        async () => {
          before = readIfExists(file);
          restoreFile(file, content(), mode);
        },
        async () => restoreFile(file, before, mode),
        reloads,
      );
    },
  };
}

/**
 * How an account's system starts: from the password createacct was given (with the store's hash
 * of it, when the call made one), or as it was on the server it moves from (its password's hash,
 * certificate and DKIM key).
 */
export type Origin = { password: string; passwordHash?: string | undefined } | { moved: MovedAccount };

/**
 * One of an account's domains as the web, dns and tls components serve it: the account seen through
 * that domain (`site.domain` is it; for the main domain, the account itself), its kind, and the
 * directory it serves relative to the home (a parked domain serves the main site's).
 */
export interface Site {
  site: Account;
  kind: 'main' | 'addon' | 'parked' | 'subdomain';
  docroot: string;
  /** Whether its mail may be this server's (not an addon or parked domain whose mail is elsewhere). */
  mailHere: boolean;
  /** What a step for this domain is called: the main domain's as ever, another's naming it. */
  named(step: string): string;
}

/** Every domain of the account, the main one (the account's own `domain`) first. */
export function sitesOf(account: Account, objects: AccountObjects | undefined): Site[] {
  const main: Site = {
    site: account,
    kind: 'main',
    docroot: MAIN_DOCROOT,
    mailHere: true,
    named: (step) => step,
  };
  const others = (objects?.domains ?? []).filter((d) => d.kind !== 'main' && d.domain !== account.domain);
  return [
    main,
    ...others.map(
      (d): Site => ({
        site: { ...account, domain: d.domain },
        kind: d.kind,
        docroot: d.docroot ?? MAIN_DOCROOT,
        mailHere: d.mail !== 'elsewhere',
        named: (step) => `${step} for ${d.domain}`,
      }),
    ),
  ];
}

/**
 * One part of the hosting stack (CONTRACT §10). Each call's steps come from every component that
 * has something to do for it; each step has its undo. `account` is the record after the change;
 * `objects` its objects (its domains…), for the components that serve them.
 */
export interface Component {
  name: LinuxComponentName;
  /** Makes the server-wide files the component needs (when the driver starts). */
  prepare?(): Promise<void>;
  create?(account: Account, origin: Origin, objects?: AccountObjects): LinuxStep[];
  /**
   * createacct's last steps, after every component's and the reloads: each waits for what the
   * component's own steps began and let run meanwhile (a PHP-FPM master starting while the rest of
   * the account is made). The call answers only once they have.
   */
  settle?(account: Account): LinuxStep[];
  remove?(account: Account, objects?: AccountObjects): LinuxStep[];
  suspend?(account: Account, objects?: AccountObjects): LinuxStep[];
  unsuspend?(account: Account, objects?: AccountObjects): LinuxStep[];
  /** The account's objects changed from `before` to `after` (a domain, mailbox … added or removed). */
  changeObjects?(account: Account, before: AccountObjects, after: AccountObjects): LinuxStep[];
  changePassword?(account: Account, password: string, passwordHash?: string): LinuxStep[];
  changeLimits?(before: Account, after: Account): LinuxStep[];
  /**
   * What goes only with the domains, mailboxes and lists that went from `before` to `after`, in the
   * change's last step, which cannot be undone (their sites' logs, which the next holder of the
   * name must not read; a mailbox's mail).
   */
  forgetObjects?(account: Account, before: AccountObjects, after: AccountObjects): Promise<void>;
  /** What goes only with the account, in removeacct's last step, which cannot be undone (logs). */
  forget?(account: Account, objects?: AccountObjects): Promise<void>;
  /** Starts what runs for the account (after a restart of Berth or of the server). */
  resume?(account: Account, objects?: AccountObjects): Promise<void>;
  /** Makes the system match the stored account (crash recovery); services reload afterwards. */
  reconcile?(account: Account, objects?: AccountObjects): Promise<void>;
  /** Removes what it made for an account the store does not have. */
  purge?(account: Account): Promise<void>;
  /**
   * Removes what it made for a domain beside an account's main one that no account has now (left
   * by an interrupted add_domain, or by an account that moved away).
   */
  purgeDomain?(domain: string): Promise<void>;
  /**
   * Differences between the store's accounts and what this component made (`berth doctor`);
   * `sites` are every domain of every one of them, `objects` their objects by user.
   */
  inspect?(
    accounts: readonly Account[],
    sites: readonly Site[],
    objects: ReadonlyMap<string, AccountObjects>,
  ): string[] | Promise<string[]>;
  /** The services its files are read by, reloaded after recovery. */
  services?: Service[];
}

/** Files in a directory of per-domain files whose name no account accounts for (doctor). */
export function strayFiles(
  ctx: LinuxContext,
  dir: string,
  expected: ReadonlySet<string>,
  suffix: string,
  what: string,
  owned: (file: string) => boolean = () => true,
): string[] {
  const real = ctx.path(dir);
  if (!existsSync(real)) return [];
  return readdirSync(real)
    .filter((file) => file.endsWith(suffix) && !file.startsWith('.') && owned(file) && !expected.has(file))
    .map(
      (file) =>
        `${suffix ? file.slice(0, -suffix.length) : file}: ${what} ${join(dir, file)} with no account in the store`,
    );
}
