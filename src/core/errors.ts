// The one error catalogue. Every failure a caller can see has a code here, with its HTTP status,
// the sentence it answers with, and how to fix it. docs/errors.md is rendered from this table.

export const AUTH_NOT_PROVIDED = 'Authentication credentials were not provided';
export const AUTH_DENIED = 'You do not have permission to perform this action.';

interface CatalogueEntry<A> {
  status: number;
  info: (args: A) => string;
  when: string;
  fix: string;
}

function entry<A = Record<never, never>>(
  status: number,
  info: (args: A) => string,
  when: string,
  fix: string,
): CatalogueEntry<A> {
  return { status, info, when, fix };
}

type Param = { param?: string; reason: string };
type User = { user: string };

export const catalogue = {
  missing_parameter: entry<{ param: string }>(
    400,
    ({ param }) => `The parameter ${param} is required.`,
    'A required parameter is absent or empty.',
    'Send the parameter named in `data.param` with a non-empty value.',
  ),
  invalid_parameter: entry<Param>(
    400,
    ({ param, reason }) =>
      param === undefined
        ? `The request is invalid: ${reason}.`
        : `The parameter ${param} is invalid: ${reason}.`,
    'A value breaks the value rules, a parameter is given twice or holds control characters, or the body does not match its Content-Type.',
    'Correct the value of the parameter named in `data.param`; `info` says which rule it breaks.',
  ),
  account_exists: entry<User>(
    400,
    ({ user }) => `An account named ${user} already exists.`,
    'createacct names a user that is taken.',
    'Choose another user name.',
  ),
  domain_in_use: entry<{ domain: string }>(
    400,
    ({ domain }) => `The domain ${domain} is, lies under or lies above a domain of another account.`,
    'createacct or add_domain names a domain that equals, lies under or lies above a domain (main, addon, parked or subdomain) of another account; the answer never names that domain.',
    'Choose another domain, or remove the account or domain that holds the overlapping one.',
  ),
  account_not_found: entry<User>(
    400,
    ({ user }) => `No account named ${user} exists.`,
    'The account does not exist, or is outside the calling reseller’s scope (the answer is the same).',
    'Check the user name; a reseller can only reach the accounts it owns.',
  ),
  limit_reached: entry<{ limit: string; value: string }>(
    400,
    ({ limit, value }) => `The account's ${limit} limit (${value}) is used up.`,
    "An account holder's add_* call when the account already has as many objects of that kind as its limit allows (CONTRACT §14).",
    'Remove one first, or have the hosting provider raise the limit (editquota, changepackage).',
  ),
  object_exists: entry<{ kind: string; name: string }>(
    400,
    ({ kind, name }) => `The account already has the ${kind} ${name}.`,
    'An add_* call names an object the account already has.',
    'Choose another name, or remove the existing one first.',
  ),
  object_not_found: entry<{ kind: string; name: string }>(
    400,
    ({ kind, name }) => `The account has no ${kind} ${name}.`,
    'A call names an object of the account that does not exist.',
    'Check the name against the list_* operation of that kind.',
  ),
  package_not_found: entry<{ name: string }>(
    400,
    ({ name }) => `No package named ${name} exists.`,
    'A package name that does not exist.',
    'Use a name from listpackages (names are case-sensitive).',
  ),
  package_exists: entry<{ name: string }>(
    400,
    ({ name }) => `A package named ${name} already exists.`,
    'addpkg with a name that is taken.',
    'Choose another name, or change the package with editpkg.',
  ),
  package_in_use: entry<{ name: string; count: number }>(
    400,
    ({ name, count }) => `The package ${name} is used by ${count} account(s).`,
    'killpkg on a package that accounts still use.',
    'Move the accounts to another package with changepackage first.',
  ),
  not_reseller: entry<User>(
    400,
    ({ user }) => `The account ${user} is not a reseller.`,
    'terminatereseller on an account that is no reseller.',
    'Nothing to do; check the user name.',
  ),
  reseller_limit: entry<{ reseller: string; limit: string }>(
    400,
    ({ reseller, limit }) => `The reseller ${reseller} would exceed its ${limit} limit.`,
    'A reseller’s account-count, quota or bandwidth limit would be exceeded.',
    'Ask the administrator to raise the limit (setupreseller), or lower the requested value.',
  ),
  reseller_has_accounts: entry<User & { count: number }>(
    400,
    ({ user, count }) => `The reseller ${user} still owns ${count} other account(s).`,
    'removeacct on a reseller that still owns other accounts.',
    'Remove those accounts, or terminatereseller to pass them to its owner, first.',
  ),
  no_free_ip: entry<{ family: string; resellers?: boolean }>(
    400,
    ({ family, resellers }) =>
      resellers
        ? `The resellers' share of the dedicated ${family} pool is used up; the rest is kept for the administrator.`
        : `No free dedicated ${family} address is left in the pool.`,
    "A dedicated address is asked for and the configured pool has none free, or a reseller asks for one and the resellers' share of the pool (`ip_pool.reseller_share`) is used up.",
    'Add addresses to the pool in the configuration, or create the account without a dedicated address.',
  ),
  not_authenticated: entry(
    403,
    () => AUTH_NOT_PROVIDED,
    'Credentials are missing (or one half of a style is missing).',
    'Send `apiuser` and `apiauth` form fields, or `X-API-USER` and `X-API-PASSWORD` headers.',
  ),
  demo_server: entry(
    403,
    () => 'This is a demonstration server: changes are disabled',
    'A state-changing call on a server started with --demo.',
    'Use a server that is not in demonstration mode.',
  ),
  forbidden: entry<{ reason?: string }>(
    403,
    ({ reason }) => reason ?? AUTH_DENIED,
    'Wrong user or password, caller’s IP not allowed, or the call is outside the caller’s rights.',
    'Check the credentials and the API account’s allowed IPs; `info` names any other missing right.',
  ),
  account_suspended: entry<User>(
    403,
    ({ user }) => `The account ${user} is suspended.`,
    'The holder of a suspended account logs in or calls the customer API, or a single sign-on is asked for one.',
    'The hosting provider unsuspends the account (unsuspendacct).',
  ),
  unknown_operation: entry<{ path: string }>(
    404,
    ({ path }) => `There is no API operation at ${path}.`,
    'A path under /api that names no operation.',
    'Check the operation name against docs/api.md; paths look like /api/v1/listaccts/.',
  ),
  method_not_allowed: entry<{ method: string }>(
    405,
    ({ method }) => `The method ${method} is not allowed: every API operation is a POST.`,
    'Any method other than POST on an API path.',
    'Send the call as POST.',
  ),
  payload_too_large: entry<{ limit: number }>(
    413,
    ({ limit }) => `The request body is larger than ${limit} bytes.`,
    'A body larger than 64 KiB.',
    'Send fewer or shorter parameters.',
  ),
  unsupported_media_type: entry<{ type: string }>(
    415,
    ({ type }) => `The content type ${type} is not supported.`,
    'A body whose Content-Type is not form-encoded, multipart or JSON.',
    'Send application/x-www-form-urlencoded, multipart/form-data or application/json.',
  ),
  rate_limited: entry<{ seconds: number; busy?: boolean; account?: boolean }>(
    429,
    ({ seconds, busy, account }) =>
      busy
        ? `Too many password checks from this address at once: try again in ${seconds} seconds.`
        : account
          ? `Too many failed logins to this account: its password logins wait ${seconds} seconds (single sign-on from the hosting provider still works).`
          : `Too many failed authentications from this address: try again in ${seconds} seconds.`,
    'The source address is locked out after repeated failed authentications, or has more password checks in flight than it may.',
    'Wait for the time in the `Retry-After` header, then fix the credentials that failed.',
  ),
  node_unavailable: entry<{ server: string; user?: string }>(
    503,
    ({ user, server }) =>
      user === undefined
        ? `No server of the fleet takes new accounts (all are drained or down); nothing was changed.`
        : `The account ${user} is on the server ${server}, which could not be reached; nothing was changed.`,
    'The server of the fleet that holds the account (or, for createacct, every server that could take it) is down, unreachable or drained.',
    'Try again after the time in the Retry-After header; berth nodes shows which servers are up.',
  ),
  provisioning_failed: entry<{ step: string; leaves?: string }>(
    500,
    ({ step, leaves }) =>
      leaves === undefined
        ? `The system step "${step}" failed; everything done for this call was undone.`
        : `The system step "${step}" failed and cannot be undone: ${leaves}; everything else done for this call was undone.`,
    'A system step failed; the state was rolled back and finished steps undone (a last step that cannot be undone says what it may leave done).',
    'Read the server log for the step’s error, fix the system, and retry the call.',
  ),
  internal: entry(
    500,
    () => 'The server could not complete the call; the details are in its log.',
    'Anything else; the details go to the server log, never to the caller.',
    'Retry; if it persists, read the server log.',
  ),
};

export type ErrorCode = keyof typeof catalogue;
type ArgsOf<C extends ErrorCode> = Parameters<(typeof catalogue)[C]['info']>[0];

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | undefined;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, info: string, param?: string, headers: Record<string, string> = {}) {
    super(info);
    this.name = 'ApiError';
    this.code = code;
    this.status = catalogue[code].status;
    this.param = param;
    this.headers = headers;
  }

  /** The envelope `data` of this error. */
  get data(): { code: ErrorCode; param?: string } {
    return this.param === undefined ? { code: this.code } : { code: this.code, param: this.param };
  }
}

/**
 * Every refusal of one form at once, for the portal: each message keyed by its parameter. As an
 * ApiError it is the first refusal's code, with all the messages.
 */
export class FieldErrors extends ApiError {
  readonly fields: Record<string, string>;

  constructor(errors: readonly ApiError[]) {
    const [first] = errors;
    if (!first) throw new Error('FieldErrors needs at least one error');
    super(first.code, errors.map((error) => error.message).join(' '), first.param);
    this.fields = {};
    for (const error of errors) this.fields[error.param ?? 'form'] ??= error.message;
  }
}

/** Builds the catalogue's error for `code`; `param` marks the one parameter at fault. */
export function apiError<C extends ErrorCode>(code: C, args: ArgsOf<C>, param?: string): ApiError {
  const render = catalogue[code].info as (a: ArgsOf<C>) => string;
  const extra = args as { param?: string };
  return new ApiError(code, render(args), param ?? extra.param);
}

export function invalid(param: string, reason: string): ApiError {
  return apiError('invalid_parameter', { param, reason });
}

export function missing(param: string): ApiError {
  return apiError('missing_parameter', { param });
}

/** How long a caller is told to wait after node_unavailable. */
const NODE_RETRY_SECONDS = 30;

/** node_unavailable, with the Retry-After its caller is told to wait. */
export function nodeUnavailable(args: { server: string; user?: string }): ApiError {
  return new ApiError('node_unavailable', catalogue.node_unavailable.info(args), undefined, {
    'retry-after': String(NODE_RETRY_SECONDS),
  });
}
