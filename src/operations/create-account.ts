// POST /api/createacct/ — creates a hosting account from a package, with per-account overrides.
import { randomUUID } from 'node:crypto';
import { apiError, invalid } from '../core/errors.ts';
import {
  type Account,
  dedicatedAddressesInUse,
  findAccount,
  insertAccount,
  LIMIT_NAMES,
  type Limits,
  serializeAccountCreation,
} from '../store/accounts.ts';
import { findOverlappingDomain } from '../store/domains.ts';
import { uniqueViolation } from '../store/errors.ts';
import { setPasswordHash } from '../store/holder-credentials.ts';
import { objectsOf } from '../store/objects.ts';
import { findPackage } from '../store/packages.ts';
import { refuseHeld, refuseHeldDomain } from '../store/pending.ts';
import type { Db } from '../store/schema.ts';
import type { HostingProfile } from '../store/servers.ts';
import { takeUid } from '../store/uids.ts';
import { changeState, enforceResellerLimits, forbidden, generatePassword, requireAlpha } from './common.ts';
import { defineOperation, kinds, optional, required } from './operation.ts';
import { limitParams } from './package-params.ts';
import { resellerOf } from './principal.ts';
import { createdRecord } from './record.ts';
import { results } from './results.ts';

const limit = (description: string) => optional(kinds.limit, `${description}; \`unlimited\` or a number`);

/**
 * Takes the first address of the pool that no account holds. Accounts made under resellers may
 * hold only `reseller_share` of the pool between them, so no reseller can empty the pool the
 * administrator's own customers draw from.
 */
async function takeAddress(
  db: Db,
  profile: HostingProfile,
  family: 4 | 6,
  underReseller: boolean,
): Promise<string> {
  const pool = family === 4 ? profile.ipPool.ipv4 : profile.ipPool.ipv6;
  const name = family === 4 ? 'IPv4' : 'IPv6';
  const inUse = await dedicatedAddressesInUse(db, family);
  if (underReseller) {
    const resellersMay = Math.floor(pool.length * profile.ipPool.resellerShare);
    const resellersHold = [...inUse.values()].filter((owner) => owner !== 'root').length;
    if (resellersHold >= resellersMay)
      throw apiError('no_free_ip', { family: name, resellers: true }, `ipv${family}`);
  }
  const free = pool.find((address) => !inUse.has(address));
  if (free === undefined) throw apiError('no_free_ip', { family: name }, `ipv${family}`);
  return free;
}

export const createAccount = defineOperation({
  name: 'createacct',
  summary: 'Create a hosting account.',
  changesState: true,
  audiences: ['admin', 'reseller'],
  event: 'account.created',
  vetoable: true,
  params: {
    domain: required(kinds.newDomain, 'Main domain'),
    user: required(kinds.user, 'Account user name'),
    email: required(kinds.email, 'Contact e-mail address'),
    package: required(kinds.packageName, 'Package name'),
    password: optional(kinds.password, 'Password; 20 random characters when omitted (never returned)'),
    language: optional(kinds.language, 'Control panel language code; default `en`'),
    theme: optional(kinds.theme, 'Theme; default `default`'),
    mailserver: optional(kinds.mailServer, '`local` or `remote`; default `local`'),
    dkim: optional(kinds.switch, 'DKIM signing; default `on`'),
    spf: optional(kinds.switch, 'SPF record; default `on`'),
    reseller: optional(kinds.switch, 'Make the account a reseller; default `off`'),
    resellerself: optional(
      kinds.switch,
      'The reseller owns its own account (administrator only); default `off`',
    ),
    use_registrar_ns: optional(kinds.switch, "Use the registrar's name servers; default `off`"),
    ipv4: optional(kinds.switch, "Dedicated IPv4 address from the pool; default the package's"),
    ipv6: optional(kinds.switch, "Dedicated IPv6 address from the pool; default the package's"),
    shell: optional(kinds.switch, "Shell access; default the package's"),
    reseller_bandwidth: limit('Reseller combined bandwidth limit in MB'),
    reseller_limt: limit('Number of accounts the reseller may create'),
    reseller_quota: limit('Reseller combined disk quota in MB'),
    server: optional(
      kinds.serverName,
      'Server of the fleet to place the account on (up, not draining); by default the one with the fewest accounts for its weight',
    ),
    ...limitParams,
  },
  example: { domain: 'example.com', user: 'alice', email: 'alice@example.com', package: 'default' },
  result: results.createdAccount,
  errors: ['account_exists', 'domain_in_use', 'package_not_found', 'reseller_limit', 'no_free_ip'],
  async run(ctx, input) {
    const { principal, services } = ctx;
    const reseller = resellerOf(principal);
    const makeReseller = input.reseller === true;
    if (makeReseller) requireAlpha(principal, 'create reseller accounts');
    if (reseller && input.resellerself === true) {
      throw forbidden('Only the administrator may create a reseller that owns its own account.');
    }
    const password = input.password ?? generatePassword();
    const passwordHash = await services.crypt.hash(password);

    const account = await changeState(ctx, async (db, system) => {
      await serializeAccountCreation(db);
      const placed = await services.fleet.place(db, input.server);
      const { profile } = placed;
      const pkg = await findPackage(db, input.package);
      if (!pkg) throw apiError('package_not_found', { name: input.package }, 'package');
      if (await findAccount(db, input.user)) throw apiError('account_exists', { user: input.user }, 'user');
      if (await services.fleet.nameTaken(placed.server, input.user)) {
        throw invalid('user', `${input.user} is already a user or group on the server ${placed.server}`);
      }
      // Not naming the other account's domain: a reseller learns no other customer's names.
      if ((await findOverlappingDomain(db, input.domain, input.user)) !== undefined)
        throw apiError('domain_in_use', { domain: input.domain }, 'domain');
      // A removal still running holds its user and domain until it ends (its failure keeps them).
      await refuseHeld(db, [input.user]);
      await refuseHeldDomain(db, input.domain);

      const limits = {} as Limits;
      for (const name of LIMIT_NAMES)
        limits[name] = input[name] !== undefined ? input[name] : pkg.limits[name];
      if (reseller) {
        await enforceResellerLimits(db, reseller.user, {
          user: null,
          quota: limits.quota,
          bandwidth: limits.bandwidth,
        });
      }
      const ownsItself = makeReseller && input.resellerself === true;
      const owner = reseller?.user ?? 'root';
      const account: Account = {
        user: input.user,
        domain: input.domain,
        contactEmail: input.email,
        package: pkg.name,
        feature: pkg.feature,
        owner: ownsItself ? input.user : owner,
        homedir: `${profile.homeBase.replace(/\/+$/, '')}/${input.user}`,
        language: input.language ?? 'en',
        theme: input.theme ?? 'default',
        mailserver: input.mailserver ?? 'local',
        dkim: input.dkim ?? true,
        spf: input.spf ?? true,
        useRegistrarNs: input.use_registrar_ns ?? false,
        nameservers: [...profile.nameservers],
        setupAt: services.now(),
        dedicatedIpv4: (input.ipv4 ?? pkg.ipv4) ? await takeAddress(db, profile, 4, reseller !== null) : null,
        dedicatedIpv6: (input.ipv6 ?? pkg.ipv6) ? await takeAddress(db, profile, 6, reseller !== null) : null,
        shellEnabled: input.shell ?? pkg.shell,
        reseller: makeReseller
          ? {
              id: randomUUID(),
              selfown: ownsItself,
              alpha: false,
              limit: input.reseller_limt ?? null,
              bandwidth: input.reseller_bandwidth ?? null,
              quota: input.reseller_quota ?? null,
              previousOwner: ownsItself ? owner : null,
            }
          : null,
        limits,
        suspension: null,
        usage: { quota: 0, bandwidth: 0 },
        server: placed.server,
        uid: await takeUid(db, services.config.uids),
      };
      try {
        await insertAccount(db, account);
      } catch (error) {
        const column = uniqueViolation(error);
        if (column === 'domain') throw apiError('domain_in_use', { domain: input.domain }, 'domain');
        if (column === 'user' || column === 'primary key')
          throw apiError('account_exists', { user: input.user }, 'user');
        throw error;
      }
      await setPasswordHash(db, account.user, passwordHash);
      await system({
        kind: 'create',
        account,
        objects: await objectsOf(db, account.user),
        password,
        passwordHash,
      });
      return account;
    });
    return {
      data: createdRecord(account, services.fleet.hosting(account.server)),
      info: `Account ${account.user} created`,
    };
  },
});
