// What an operation is: its parameter schema, its summary and example, and `run`. Every entry point
// (HTTP, CLI, portal) goes through execute.ts, which parses the parameters with the schema.
import {
  CRON_COMMAND_MAX,
  CRON_JOB_ID_PATTERN,
  parseCronCommand,
  parseCronJobId,
  parseCronSchedule,
} from '../core/cron.ts';
import { DATABASE_NAME_PATTERN, parseDatabaseName } from '../core/databases.ts';
import { type DomainRules, parseNewDomain } from '../core/domain-claims.ts';
import { ApiError, catalogue, type ErrorCode, invalid, missing } from '../core/errors.ts';
import { parseFtpDirectory, parseFtpLogin } from '../core/ftp.ts';
import * as values from '../core/values.ts';
import { hasControlCharacters } from '../core/values.ts';
import type { Services } from '../services.ts';
import type { Db } from '../store/schema.ts';
import type { Audience, Principal } from './principal.ts';
import type { Schema } from './results.ts';

export interface Context {
  services: Services;
  /** Who calls, and for whom (principal.ts). */
  principal: Principal;
  db: Db;
  /** Appends the audit entry of this call's success inside the transaction that makes the change. */
  recordSuccess(db: Db): Promise<void>;
}

/** A value sent that is not text: a file, or a JSON value other than a string or a number. */
export class NotText {
  /** What it is, for the message: "a file", "true (a JSON boolean)". */
  readonly what: string;
  constructor(what: string) {
    this.what = what;
  }
}

/** The raw parameters of a call: every value given for each name. */
export type RawParams = ReadonlyMap<string, readonly (string | NotText)[]>;

export interface ValueKind<T> {
  /** How the value is described in the docs: `string`, `on|off`, `unlimited|number`. */
  type: string;
  /** Its rules in a phrase, for the reference (docs/api.md) and the OpenAPI description. */
  rule: string;
  /** The same rules as a JSON Schema, for the OpenAPI document. */
  schema: Record<string, unknown>;
  parse(param: string, raw: string, context: DomainRules): T;
  /** `reason` may hold tab and newline; no other value may hold a control character. */
  multiline?: boolean;
}

export interface ParamSpec<T = unknown, R extends boolean = boolean> {
  kind: ValueKind<T>;
  required: R;
  description: string;
}

export type ParamSchema = Record<string, ParamSpec>;

export type Input<S extends ParamSchema> = {
  [K in keyof S]: S[K] extends ParamSpec<infer T, true>
    ? T
    : S[K] extends ParamSpec<infer T, false>
      ? T | undefined
      : never;
};

export function required<T>(kind: ValueKind<T>, description: string): ParamSpec<T, true> {
  return { kind, required: true, description };
}

export function optional<T>(kind: ValueKind<T>, description: string): ParamSpec<T, false> {
  return { kind, required: false, description };
}

const kind = <T>(
  type: string,
  parse: (param: string, raw: string, server: DomainRules) => T,
  rule: string,
  schema: Record<string, unknown>,
  multiline = false,
): ValueKind<T> => ({ type, parse, rule, schema, ...(multiline && { multiline }) });

const NAME_64 = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';

export const kinds = {
  user: kind(
    'string',
    values.parseUser,
    '1 to 16 lower-case letters and digits, starting with a letter; not starting with "test", not a reserved system name',
    { type: 'string', pattern: '^[a-z][a-z0-9]{0,15}$', minLength: 1, maxLength: 16 },
  ),
  domain: kind(
    'string',
    (p, raw, server) => values.parseDomain(p, raw, server),
    "a domain name of at least two labels, at most 253 characters (an IDN or upper case is turned into lower-case punycode); not the server's own names",
    { type: 'string', minLength: 3, maxLength: 253 },
  ),
  /** A domain an account takes (createacct, add_domain): also none that domain-claims.ts refuses. */
  newDomain: kind(
    'string',
    parseNewDomain,
    "a domain name of at least two labels, at most 253 characters (an IDN or upper case is turned into lower-case punycode); not the server's own names, a special-use name (.local, .localhost, .invalid, .onion, .arpa, …), a public suffix (co.uk) or a reserved domain (reserved_domains)",
    { type: 'string', minLength: 3, maxLength: 253 },
  ),
  email: kind('string', values.parseEmail, 'an e-mail address local@domain, at most 254 characters', {
    type: 'string',
    format: 'email',
    maxLength: 254,
  }),
  listAddress: kind(
    'string',
    values.parseListAddress,
    'an e-mail address local@domain, at most 254 characters, with no / before @',
    { type: 'string', format: 'email', maxLength: 254 },
  ),
  mailAddress: kind(
    'string',
    values.parseMailAddress,
    "an e-mail address in one of the account's domains; before @ 1 to 64 letters, digits and . _ -, starting and ending with a letter or digit",
    {
      type: 'string',
      format: 'email',
      maxLength: 254,
      pattern: '^[A-Za-z0-9]([A-Za-z0-9._-]{0,62}[A-Za-z0-9])?@',
    },
  ),
  addressList: kind('string', values.parseAddressList, 'one to 20 e-mail addresses, comma-separated', {
    type: 'string',
    minLength: 3,
    maxLength: 5120,
  }),
  packageName: kind(
    'string',
    values.parsePackageName,
    '1 to 64 letters, digits, spaces, _ . or -, starting with a letter or digit',
    { type: 'string', pattern: values.PACKAGE_NAME.source, minLength: 1, maxLength: 64 },
  ),
  objectName: kind(
    'string',
    values.parseObjectName,
    '1 to 64 letters, digits, spaces, _ . or -, starting with a letter or digit',
    { type: 'string', pattern: values.PACKAGE_NAME.source, minLength: 1, maxLength: 64 },
  ),
  limit: kind(
    'unlimited|number',
    values.parseLimit,
    '"unlimited" (any case) or a whole number from 0 to 2147483647; in JSON also a number',
    {
      oneOf: [
        { type: 'string', pattern: '^([Uu][Nn][Ll][Ii][Mm][Ii][Tt][Ee][Dd]|[0-9]{1,10})$' },
        { type: 'integer', minimum: 0, maximum: values.MAX_LIMIT },
      ],
    },
  ),
  switch: kind(
    'on|off',
    values.parseSwitch,
    'on or off (also 1/0, yes/no, true/false, in any case); in JSON also 1 or 0',
    {
      oneOf: [
        { type: 'string', enum: ['on', 'off', '1', '0', 'yes', 'no', 'true', 'false'] },
        { type: 'integer', enum: [0, 1] },
      ],
    },
  ),
  password: kind('string', values.parsePassword, '8 to 128 characters, no control characters', {
    type: 'string',
    format: 'password',
    minLength: 8,
    maxLength: 128,
  }),
  reason: kind(
    'string',
    values.parseReason,
    'text of at most 1000 characters; tabs and line breaks allowed',
    { type: 'string', maxLength: 1000 },
    true,
  ),
  language: kind('string', values.parseLanguage, 'a language code such as en, de or pt_BR', {
    type: 'string',
    pattern: '^[a-z]{2,3}([-_][A-Za-z0-9]{2,8})?$',
  }),
  theme: kind(
    'string',
    values.parseTheme,
    '1 to 64 letters, digits, _ . or -, starting with a letter or digit',
    {
      type: 'string',
      pattern: NAME_64,
    },
  ),
  featureList: kind(
    'string',
    values.parseFeatureList,
    '1 to 64 letters, digits, _ . or -, starting with a letter or digit',
    { type: 'string', pattern: NAME_64 },
  ),
  serverName: kind(
    'string',
    values.parseServerName,
    'a server of the fleet, as berth nodes lists it: lower-case letters, digits and -',
    { type: 'string', pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', maxLength: 63 },
  ),
  mailServer: kind('local|remote', values.parseMailServer, 'local or remote (any case)', {
    type: 'string',
    enum: ['local', 'remote'],
  }),
  domainType: kind(
    'addon|parked|subdomain',
    values.parseDomainType,
    'addon, parked or subdomain (any case)',
    {
      type: 'string',
      enum: ['addon', 'parked', 'subdomain'],
    },
  ),
  docroot: kind(
    'string',
    values.parseDocroot,
    'a directory relative to the home: names of letters, digits, _ . or - separated by /, none starting with a dot, no .., not Maildir or mail; never through a link',
    { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_][A-Za-z0-9_./-]*$' },
  ),
  cronSchedule: kind(
    'string',
    parseCronSchedule,
    'five cron fields, minute hour day-of-month month day-of-week: each *, a value, a range a-b, either with /step, or a list of those; month and day-of-week names (jan, mon) too; no @-words',
    { type: 'string', minLength: 9, maxLength: 200 },
  ),
  cronCommand: kind(
    'string',
    parseCronCommand,
    `one line of at most ${CRON_COMMAND_MAX} characters, no control characters; run by /bin/sh`,
    { type: 'string', minLength: 1, maxLength: CRON_COMMAND_MAX },
  ),
  ftpLogin: kind(
    'string',
    parseFtpLogin,
    'a login of 1 to 32 lower-case letters, digits and . _ -, starting and ending with a letter or digit; `@<main domain>` may follow',
    { type: 'string', minLength: 1, maxLength: 286, pattern: '^[A-Za-z0-9][A-Za-z0-9._@-]*$' },
  ),
  ftpDirectory: kind(
    'string',
    parseFtpDirectory,
    'a directory relative to the home: names of letters, digits, _ . or - separated by /, none starting with a dot, no .., not Maildir or mail; never through a link',
    { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_][A-Za-z0-9_./-]*$' },
  ),
  cronJobId: kind('string', parseCronJobId, 'a cron job id, as list_cron_jobs answers it', {
    type: 'string',
    pattern: CRON_JOB_ID_PATTERN.source,
  }),
  databaseName: kind(
    'string',
    parseDatabaseName,
    'a database or database user name: `<suffix>` (the prefix `<user>_` is added) or `<user>_<suffix>`; the suffix is 1 to 16 characters of a-z, 0-9 and _',
    { type: 'string', pattern: DATABASE_NAME_PATTERN.source },
  ),
};

export interface Result {
  data: unknown;
  info: string;
  /** Sent as `data` alone, without the envelope (the credential check only). */
  bare?: boolean;
  /**
   * The whole answer, envelope included, as JSON text in pieces: for listings too large to build
   * in one piece without stalling other calls. `data` and `info` are then unused.
   */
  stream?: AsyncIterable<string>;
  /** The whole answer, envelope included, as JSON already built. */
  body?: Buffer;
  /** The HTTP status of `body`, when it is not 200 (a replayed error answer). */
  status?: number;
}

export interface Operation<S extends ParamSchema = ParamSchema> {
  /** The path segment: /api/<name>/. */
  name: string;
  summary: string;
  /** Whether it changes state: audited, refused on a demonstration server. */
  changesState: boolean;
  /**
   * Who may call it: the administrator, resellers, account holders (and whoever acts for one).
   * Anyone else gets 403; package changes, for one, are the administrator's alone.
   */
  audiences: readonly Audience[];
  /** The event its success sends to hooks and webhooks (docs/events.md), if any. */
  event?: string;
  /**
   * Its answer holds a secret (a single sign-on URL) that is kept nowhere: an Idempotency-Key is not
   * honoured (its answer would be kept for 24 hours), and every call acts anew.
   */
  secretAnswer?: boolean;
  /** Whether veto hooks (`<data-dir>/hooks/pre-<name>/`) may refuse it before it acts. */
  vetoable?: boolean;
  params: S;
  example: Record<string, string>;
  /** The JSON Schema of `data` in its answer (results.ts). */
  result: Schema;
  /** The error codes particular to it; errorsOf adds those every call can meet. */
  errors: ErrorCode[];
  run(ctx: Context, input: Input<S>): Promise<Result>;
}

/** Every error code a call of `operation` can answer with, in catalogue order. */
export function errorsOf(operation: Operation): ErrorCode[] {
  const codes = new Set<ErrorCode>([
    'not_authenticated',
    'forbidden',
    'rate_limited',
    'invalid_parameter',
    'payload_too_large',
    'unsupported_media_type',
    'internal',
    ...operation.errors,
  ]);
  if (Object.values(operation.params).some((spec) => spec.required)) codes.add('missing_parameter');
  // A holder's: its account suspended; acting for one, the account named by `user` (or none).
  if (operation.audiences.includes('holder'))
    for (const code of ['account_suspended', 'account_not_found', 'missing_parameter'] as const)
      codes.add(code);
  if (operation.changesState)
    for (const code of ['demo_server', 'node_unavailable', 'provisioning_failed'] as const) codes.add(code);
  return (Object.keys(catalogue) as ErrorCode[]).filter((code) => codes.has(code));
}

/** Declares an operation with its input type inferred from its schema. */
export function defineOperation<S extends ParamSchema>(operation: Operation<S>): Operation<S> {
  return operation;
}

/** Checks one declared parameter and returns it parsed, or undefined when it is absent. */
function parseParam(name: string, spec: ParamSpec, raw: RawParams, server: DomainRules): unknown {
  const given = raw.get(name) ?? [];
  if (given.length > 1) throw invalid(name, 'it is given more than once');
  const value = given[0];
  if (value instanceof NotText) throw invalid(name, `it must be text or a number, not ${value.what}`);
  if (value === undefined) {
    // PHP's and Rails' way of sending a list (user[]=x, user[0]=x) is not this parameter.
    const listed = [...raw.keys()].find((key) => key.startsWith(`${name}[`));
    if (listed) throw invalid(name, `it was sent as ${listed}, a list: send ${name} once, as text`);
  }
  if (value === undefined || value === '') {
    if (spec.required) throw missing(name);
    return undefined;
  }
  if (hasControlCharacters(value, spec.kind.multiline === true)) {
    throw invalid(name, 'it holds control characters');
  }
  return spec.kind.parse(name, value, server);
}

/** Checks every declared parameter and returns them parsed; undeclared ones are ignored. */
export function parseParams<S extends ParamSchema>(schema: S, raw: RawParams, server: DomainRules): Input<S> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(schema)) {
    const value = parseParam(name, spec, raw, server);
    if (value !== undefined) out[name] = value;
  }
  return out as Input<S>;
}

/** Every parameter's refusal, not only the first: for forms that show them all at once. */
export function paramErrors(schema: ParamSchema, raw: RawParams, server: DomainRules): ApiError[] {
  const errors: ApiError[] = [];
  for (const [name, spec] of Object.entries(schema)) {
    try {
      parseParam(name, spec, raw, server);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      errors.push(error);
    }
  }
  return errors;
}
