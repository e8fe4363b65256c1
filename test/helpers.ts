// Builds Berth in-process on a throwaway data directory, and calls it as billing software would.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import type { Logger } from 'pino';
import { startCluster } from '../scripts/pg-cluster.ts';
import { buildApp } from '../src/app.ts';
import { createApiUser } from '../src/auth/api-users.ts';
import { type Config, type ConfigOverrides, loadConfig } from '../src/config/index.ts';
import { ApiError, type ErrorCode } from '../src/core/errors.ts';
import { CLI } from '../src/operations/audited.ts';
import { execute } from '../src/operations/execute.ts';
import type { Result } from '../src/operations/operation.ts';
import type { Principal } from '../src/operations/principal.ts';
import { customerOperations } from '../src/operations/registry.ts';
import type { Driver, Step } from '../src/provision/driver.ts';
import { recordDriver } from '../src/provision/record/driver.ts';
import { createLogger, openServices, type Services } from '../src/services.ts';
import { findAccount } from '../src/store/accounts.ts';
import type { ApiUser } from '../src/store/api-users.ts';
import { restoreAccounts } from '../src/store/pending.ts';
import type { ObjectTable } from '../src/store/schema.ts';
import { checkAnswer } from './answers.ts';

export const ADMIN_USER = 'billing';
export const ADMIN_PASSWORD = 'billing-secret-1';

/** The content type of a form post, as billing software and browsers send it. */
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

export interface Envelope {
  data: unknown;
  info: string;
  status: number;
}

export interface Reply {
  statusCode: number;
  headers: Record<string, unknown>;
  body: Envelope & Record<string, unknown>;
}

export interface Harness {
  services: Services;
  admin: FastifyInstance;
  reseller: FastifyInstance;
  /** The customer listener: the account holders' panel and API (CONTRACT §14). */
  customer: FastifyInstance;
  dataDir: string;
  /** Calls an operation with form-field credentials as the administrator's API user. */
  call(op: string, params?: Record<string, string>): Promise<Reply>;
  /** Calls an operation in header style with X-RESELLER, on the reseller listener. */
  callAs(reseller: string, op: string, params?: Record<string, string>): Promise<Reply>;
  /**
   * Calls a holder's operation on the customer listener, with the account's user name and password
   * (HTTP Basic) or, given a token alone, Bearer; from `address` when given (a wrong one counts
   * toward that address's lock-out).
   */
  callAsHolder(
    credentials: ({ user: string; password: string } | { token: string }) & { address?: string },
    op: string,
    params?: Record<string, string>,
  ): Promise<Reply>;
  /** Calls a holder's operation for `user`'s holder as the administrator, at /api/account/<op>/. */
  callForHolder(user: string, op: string, params?: Record<string, string>): Promise<Reply>;
  /** Any request, for transport tests. */
  request(options: {
    method?: string;
    url: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    listener?: 'admin' | 'reseller' | 'customer';
    remoteAddress?: string;
  }): Promise<Reply>;
  close(): Promise<void>;
}

/** The `stream` of a test's command runner that streams no command: a call is the test's failure. */
export function streamsNothing(argv: readonly string[]): never {
  throw new Error(`no command is streamed here: ${argv.join(' ')}`);
}

export function tempDir(prefix = 'berth-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * Runs `command` in a mount namespace of its own (unshare), then the shell line `probe` there:
 * their output, with the command's failure said as `failed <status>` on the output.
 */
export function inMountNamespace(
  command: readonly string[],
  probe: string,
): { stdout: string; stderr: string } {
  const run = spawnSync('/usr/bin/unshare', [
    '--mount',
    '--propagation',
    'private',
    '--',
    '/bin/sh',
    '-c',
    `"$@" || echo "failed $?"; ${probe}`,
    'sh',
    ...command,
  ]);
  return { stdout: run.stdout.toString(), stderr: run.stderr.toString() };
}

export function form(params: Record<string, string>): string {
  return new URLSearchParams(params).toString();
}

/**
 * The dialect the store tests run on: SQLite, or PostgreSQL when BERTH_TEST_DATABASE_URL names a
 * server (scripts/with-postgres.ts sets it for the second pass of `npm test`).
 */
export const TEST_DIALECT = process.env.BERTH_TEST_DATABASE_URL ? 'postgres' : 'sqlite';

/** A fresh, empty database for one test on the PostgreSQL pass; null on SQLite. */
export async function testDatabase(): Promise<{ url: string; drop(): Promise<void> } | null> {
  const admin = process.env.BERTH_TEST_DATABASE_URL;
  if (!admin) return null;
  const name = `berth_${randomBytes(6).toString('hex')}`;
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await run(`create database ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  // Without FORCE, and tried again while the closed pool's last backends finish exiting: forcing
  // them out would make a still-open client report the termination as an uncaught error.
  const drop = async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run(`drop database if exists ${name}`);
      } catch (error) {
        if (attempt >= 50 || !/being accessed by other users/.test(String(error))) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };
  return { url: url.toString(), drop };
}

export async function setup(
  overrides: ConfigOverrides = {},
  options: { driver?: Driver; makeDriver?: (config: Config) => Driver | Promise<Driver>; log?: Logger } = {},
): Promise<Harness> {
  const dataDir = tempDir();
  const database = await testDatabase();
  const config = loadConfig({
    dataDir,
    database: database?.url ?? null,
    hostName: 'panel.example.net',
    nodeName: 'panel',
    sharedIpv4: '192.0.2.1',
    sharedIpv6: '',
    ...overrides,
  });
  const services = await openServices(config, {
    log: options.log ?? createLogger('silent'),
    cryptThreads: 1,
    driver: options.driver ?? (await options.makeDriver?.(config)),
  });
  await addApiUser(services, { name: ADMIN_USER, password: ADMIN_PASSWORD });
  const admin = buildApp(services, { listener: 'admin', tls: null });
  const reseller = buildApp(services, { listener: 'reseller', tls: null });
  const customer = buildApp(services, { listener: 'customer', tls: null });

  const request: Harness['request'] = async (options) => {
    const app = { admin, reseller, customer }[options.listener ?? 'admin'];
    const response = await app.inject({
      method: (options.method ?? 'POST') as 'POST',
      url: options.url,
      headers: options.headers,
      payload: options.body,
      remoteAddress: options.remoteAddress ?? '127.0.0.1',
    });
    const text = response.body;
    const body = (text === '' ? {} : JSON.parse(text)) as Reply['body'];
    const side = options.listener === 'customer' ? 'customer' : 'api';
    checkAnswer(options.method ?? 'POST', options.url, response.statusCode, body, side);
    return { statusCode: response.statusCode, headers: response.headers, body };
  };

  return {
    services,
    admin,
    reseller,
    customer,
    dataDir,
    request,
    call: (op, params = {}) =>
      request({
        url: `/api/v1/${op}/`,
        headers: FORM,
        body: form({ apiuser: ADMIN_USER, apiauth: ADMIN_PASSWORD, ...params }),
      }),
    callAsHolder: (credentials, op, params = {}) =>
      request({
        url: `/api/v1/${op}/`,
        listener: 'customer',
        headers: {
          ...FORM,
          authorization:
            'token' in credentials
              ? `Bearer ${credentials.token}`
              : `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`,
        },
        body: form(params),
        ...(credentials.address !== undefined && { remoteAddress: credentials.address }),
      }),
    callForHolder: (user, op, params = {}) =>
      request({
        url: `/api/v1/account/${op}/`,
        headers: FORM,
        body: form({ apiuser: ADMIN_USER, apiauth: ADMIN_PASSWORD, user, ...params }),
      }),
    callAs: (resellerName, op, params = {}) =>
      request({
        url: `/api/v1/${op}/`,
        listener: 'reseller',
        headers: {
          ...FORM,
          'x-api-user': ADMIN_USER,
          'x-api-password': ADMIN_PASSWORD,
          'x-reseller': resellerName,
        },
        body: form(params),
      }),
    async close() {
      await Promise.all([admin.close(), reseller.close(), customer.close()]);
      await services.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * What `build` makes, for one describe block: built before its first test, closed after its last.
 * The object stands for it from the start, so the block's tests can name it.
 */
export function forSuite<T extends { close(): Promise<void> }>(build: () => Promise<T>): T {
  let current: T | null = null;
  before(async () => {
    current = await build();
  });
  after(() => current?.close());
  return new Proxy({} as T, {
    get(_target, key) {
      if (!current) throw new Error(`the suite's ${String(key)} is used before it is built`);
      return Reflect.get(current, key);
    },
  });
}

/** The harness of one describe block (see forSuite), `prepare`d once it is set up. */
export function suiteHarness(
  options: {
    config?: ConfigOverrides;
    driver?: Driver;
    log?: Logger;
    prepare?: (h: Harness) => Promise<unknown>;
  } = {},
): Harness {
  return forSuite(async () => {
    const h = await setup(options.config, { driver: options.driver, log: options.log });
    await options.prepare?.(h);
    return h;
  });
}

/** A webhook that takes `events`, so that they are kept (it is never reached). */
export function webhookTaking(events: readonly string[]) {
  return { url: 'http://127.0.0.1:9/hook', secret: 'webhook-secret-0123456789', events: [...events] };
}

/** Adds an API user as `berth api-user add` would: from anywhere and for no reseller unless given. */
export function addApiUser(
  services: Pick<Services, 'store' | 'crypt'>,
  user: { name: string; password: string; allowedIps?: string[]; reseller?: string | null },
): Promise<ApiUser> {
  return createApiUser(services.store.db, services.crypt, { allowedIps: [], reseller: null, ...user }, CLI);
}

/** The administrator through the API, as the billing system calls. */
export const ADMIN_PRINCIPAL: Principal = {
  kind: 'admin',
  via: 'api',
  apiAccount: { name: 'billing', id: 'billing-id' },
  address: '192.0.2.8',
};

/**
 * Calls an operation of the account holder's side (customerOperations) through the one pipeline,
 * as the administrator acting for `user`'s holder (/api/account/<op>/); an ApiError when refused.
 */
export function callForHolder(
  h: { services: Services },
  user: string,
  op: string,
  params: Record<string, string> = {},
): Promise<Result> {
  const operation = customerOperations.find(op);
  if (!operation) throw new Error(`${op} is no operation of the account holder's side`);
  return execute(h.services, {
    operation,
    params: new Map(Object.entries(params).map(([name, value]) => [name, [value]])),
    address: ADMIN_PRINCIPAL.address,
    claimedUser: 'billing',
    identify: async () => ADMIN_PRINCIPAL,
    actingFor: [user],
  });
}

/**
 * Calls an operation of the account holder's side through the one pipeline as `user`'s holder
 * itself, logged in with the account's password from 192.0.2.9; an ApiError when refused.
 */
export async function callAsOwnHolder(
  h: { services: Services },
  user: string,
  op: string,
  params: Record<string, string> = {},
): Promise<Result> {
  const operation = customerOperations.find(op);
  if (!operation) throw new Error(`${op} is no operation of the account holder's side`);
  const account = await findAccount(h.services.store.db, user);
  if (!account) throw new Error(`no account ${user}`);
  const holder = {
    kind: 'holder',
    via: 'password',
    account,
    credential: null,
    address: '192.0.2.9',
  } as const;
  return execute(h.services, {
    operation,
    params: new Map(Object.entries(params).map(([name, value]) => [name, [value]])),
    address: holder.address,
    claimedUser: `customer:${user}`,
    identify: async () => holder,
  });
}

/** The audit row of `operation` called by `user`'s holder itself (api_user customer:<user>). */
export function holderAuditRow(h: { services: Services }, operation: string, user: string) {
  return h.services.store.db
    .selectFrom('audit_log')
    .selectAll()
    .where('operation', '=', operation)
    .where('api_user', '=', `customer:${user}`)
    .executeTakeFirst();
}

/** The audit rows of the operations named like `pattern` (SQL LIKE) that succeeded. */
export function succeededAudit(h: { services: Services }, pattern: string) {
  return h.services.store.db
    .selectFrom('audit_log')
    .selectAll()
    .where('operation', 'like', pattern)
    .where('status', '=', 200)
    .execute();
}

/** Every event sent, after failing the test unless one of each of `types` is among them. */
export async function assertEventsSent(h: { services: Services }, types: readonly string[]) {
  const events = await h.services.store.db.selectFrom('events').select(['type', 'payload']).execute();
  for (const type of types)
    assert.ok(
      events.some((e) => e.type === type),
      type,
    );
  return events;
}

/**
 * Calls createacct as the administrator for `user` (on `user`.example.com, package default unless
 * given) and answers whatever it answers.
 */
export function callCreateacct(
  h: Harness,
  user: string,
  params: Record<string, string> = {},
): Promise<Reply> {
  return h.call('createacct', {
    user,
    domain: `${user}.example.com`,
    email: `${user}@example.org`,
    package: 'default',
    ...params,
  });
}

/** Creates an account as the administrator and fails the test if that is refused. */
export async function createAccount(
  h: Harness,
  user: string,
  params: Record<string, string> = {},
): Promise<Reply> {
  const reply = await callCreateacct(h, user, params);
  if (reply.statusCode !== 200) throw new Error(`createacct ${user}: ${JSON.stringify(reply.body)}`);
  return reply;
}

/** Creates a reseller account (as the administrator) and returns its name. */
export async function createReseller(
  h: Harness,
  user: string,
  params: Record<string, string> = {},
): Promise<string> {
  await createAccount(h, user, { reseller: 'on', ...params });
  return user;
}

/**
 * The accounts most operation tests work on: alice, the administrator's own, and the reseller res
 * with its `children`, in that order.
 */
export async function createAliceAndReseller(h: Harness, ...children: string[]): Promise<void> {
  await createAccount(h, 'alice');
  await createReseller(h, 'res');
  for (const child of children) await createChild(h, 'res', child);
}

/** The account record as accountsummary answers it (as the administrator). */
export async function summary(h: Harness, user: string): Promise<Record<string, unknown>> {
  return ((await h.call('accountsummary', { user })).body.data as { acct: Record<string, unknown> }).acct;
}

/** Creates an account as the reseller, on the reseller listener, and fails the test if refused. */
export async function createChild(
  h: Harness,
  reseller: string,
  user: string,
  params: Record<string, string> = {},
): Promise<Reply> {
  const reply = await h.callAs(reseller, 'createacct', {
    user,
    domain: `${user}.example`,
    email: `${user}@example.com`,
    package: 'default',
    ...params,
  });
  if (reply.statusCode !== 200)
    throw new Error(`createacct ${user} as ${reseller}: ${JSON.stringify(reply.body)}`);
  return reply;
}

/** Asserts the whole answer of a change that went through: its sentence as data and info, 200. */
export function assertSentence(reply: Reply, sentence: string): void {
  assert.deepEqual(reply.body, { data: sentence, info: sentence, status: 200 });
}

/** Asserts the whole answer of a refusal without a parameter: its code as data, its message as info. */
export function assertErrorAnswer(
  reply: Reply,
  status: number,
  code: string,
  info: string,
  message?: string,
): void {
  assert.deepEqual(reply.body, { data: { code }, info, status }, message);
}

/** Asserts that a call was refused with this status, error code and parameter (undefined: none). */
export function assertRefused(reply: Reply, status: number, code: string, param: string | undefined): void {
  assert.deepEqual(errorOf(reply), { status, code, param });
}

/** The status and error code an operation run directly threw; fails the test if it went through. */
/** What a refused call answered: its status, code, parameter (when there is one) and sentence. */
export async function refused(
  promise: Promise<unknown>,
): Promise<{ status: number; code: string; param?: string; info: string }> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiError, String(error));
  return {
    status: error.status,
    code: error.code,
    ...(error.param && { param: error.param }),
    info: error.message,
  };
}

export async function refusal(promise: Promise<unknown>): Promise<{ status: number; code: ErrorCode }> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiError, String(error));
  return { status: error.status, code: error.code };
}

export function errorOf(reply: Reply): { status: number; code: unknown; param: unknown } {
  const data = reply.body.data as { code?: unknown; param?: unknown };
  return { status: reply.statusCode, code: data?.code, param: data?.param };
}

/**
 * A driver that records every step it runs and undoes, and fails the step named in `failAt`.
 * Stands in for a real system in tests of rollback.
 */
export function recordingDriver(): Driver & { log: string[]; failAt: string | null } {
  const base = recordDriver();
  const driver = {
    ...base,
    log: [] as string[],
    failAt: null as string | null,
  };
  const steps = (kind: string, target: string): Step[] =>
    ['first', 'second', 'third'].map((name) => ({
      name: `${kind}:${name}`,
      run: async () => {
        if (driver.failAt === `${kind}:${name}`) throw new Error(`injected failure at ${kind}:${name}`);
        driver.log.push(`run ${kind}:${name} ${target}`);
      },
      undo: async () => {
        driver.log.push(`undo ${kind}:${name} ${target}`);
      },
    }));
  driver.createAccount = (account) => steps('create', account.user);
  driver.removeAccount = (account) => steps('remove', account.user);
  driver.suspendAccount = (account) => steps('suspend', account.user);
  driver.unsuspendAccount = (account) => steps('unsuspend', account.user);
  driver.changePassword = (account) => steps('passwd', account.user);
  driver.changeLimits = (_before, after) => steps('limits', after.user);
  return driver;
}

/**
 * A PostgreSQL database for tests that need one whatever the pass: a fresh database on the
 * PostgreSQL pass, else a throwaway cluster of their own.
 */
export async function postgresForTest(): Promise<{ url: string; release(): Promise<void> }> {
  const database = await testDatabase();
  if (database) return { url: database.url, release: database.drop };
  const cluster = await startCluster();
  return { url: cluster.url, release: async () => cluster.stop() };
}

/**
 * Puts back, as a failed change would, the account's row as it is now with `objects` as the rows of
 * its objects that change kept: rows kept by an older Berth, which had fewer kinds of object (or
 * fewer columns), come back as the store keeps them now.
 */
export async function putBackHeld(
  h: { services: Services },
  user: string,
  objects: Partial<Record<ObjectTable, object[]>>,
): Promise<void> {
  const db = h.services.store.db;
  const row = await db.selectFrom('accounts').selectAll().where('user', '=', user).executeTakeFirstOrThrow();
  const txn = `held-${randomBytes(4).toString('hex')}`;
  await db
    .insertInto('pending_changes')
    .values({
      user,
      txn,
      server: h.services.config.nodeName,
      domain: row.domain,
      before: JSON.stringify(row),
      objects: JSON.stringify(objects),
      package: null,
      created_ms: Date.now(),
    })
    .execute();
  await restoreAccounts(db, txn);
}
