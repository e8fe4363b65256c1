// What an operation is: its parameter schema, its summary and example, and `run`. Every entry point
// (HTTP, CLI, portal) goes through execute.ts, which parses the parameters with the schema.
import { invalid, missing } from '../errors.ts';
import type { Services } from '../services.ts';
import type { Account } from '../store/accounts.ts';
import type { Db } from '../store/schema.ts';
import * as values from '../values.ts';
import { hasControlCharacters } from '../values.ts';

/** Who is calling: the API account (or `root` for the portal and CLI) and the reseller it acts as. */
export interface Caller {
  apiUser: string;
  /** The API account's id, which idempotency keys belong to; absent for the portal and CLI. */
  apiUserId?: string;
  address: string;
  /** The reseller account the call acts as, or null for the administrator. */
  reseller: Account | null;
}

export interface Context {
  services: Services;
  caller: Caller;
  db: Db;
  /** Appends the audit entry of this call's success inside the transaction that makes the change. */
  recordSuccess(db: Db): Promise<void>;
}

/** The raw parameters of a call: every value given for each name (null: not text, e.g. a file). */
export type RawParams = ReadonlyMap<string, readonly (string | null)[]>;

export interface ValueKind<T> {
  /** How the value is described in the docs: `string`, `on|off`, `unlimited|number`. */
  type: string;
  parse(param: string, raw: string, context: values.ServerNames): T;
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

const plain = <T>(type: string, parse: (param: string, raw: string) => T): ValueKind<T> => ({ type, parse });

export const kinds = {
  user: plain('string', values.parseUser),
  domain: {
    type: 'string',
    parse: (p, raw, c) => values.parseDomain(p, raw, c),
  } as ValueKind<string>,
  email: plain('string', values.parseEmail),
  packageName: plain('string', values.parsePackageName),
  limit: plain('unlimited|number', values.parseLimit),
  switch: plain('on|off', values.parseSwitch),
  password: plain('string', values.parsePassword),
  reason: { type: 'string', parse: values.parseReason, multiline: true } as ValueKind<string>,
  language: plain('string', values.parseLanguage),
  theme: plain('string', values.parseTheme),
  featureList: plain('string', values.parseFeatureList),
  mailServer: plain('local|remote', values.parseMailServer),
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
  /** Package changes are the administrator's: 403 under a reseller. */
  adminOnly: boolean;
  params: S;
  example: Record<string, string>;
  run(ctx: Context, input: Input<S>): Promise<Result>;
}

/** Declares an operation with its input type inferred from its schema. */
export function defineOperation<S extends ParamSchema>(operation: Operation<S>): Operation<S> {
  return operation;
}

/** Checks every declared parameter and returns them parsed; undeclared ones are ignored. */
export function parseParams<S extends ParamSchema>(
  schema: S,
  raw: RawParams,
  server: values.ServerNames,
): Input<S> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(schema)) {
    const given = raw.get(name) ?? [];
    if (given.length > 1) throw invalid(name, 'it is given more than once');
    const value = given[0];
    if (value === null) throw invalid(name, 'it must be text, not a file');
    if (value === undefined || value === '') {
      if (spec.required) throw missing(name);
      continue;
    }
    if (hasControlCharacters(value, spec.kind.multiline === true)) {
      throw invalid(name, 'it holds control characters');
    }
    out[name] = spec.kind.parse(name, value, server);
  }
  return out as Input<S>;
}
