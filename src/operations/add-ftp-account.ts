// add_ftp_account (CONTRACT §14), an operation of the account holder's (or of an administrator or
// reseller acting for one): an FTP login `<login>@<main domain>` with its own password (kept as its
// hash alone), confined to a directory of the home (made when missing, never through a link), its
// files the account's, with an optional quota. The account's ftp limit is taken inside the
// transaction that adds it (the account's row is locked), so that concurrent adds never pass it;
// the account's own login, which works over FTPS too, does not count.
import { apiError, invalid } from '../core/errors.ts';
import { formatLimit } from '../core/values.ts';
import { uniqueViolation } from '../store/errors.ts';
import { type FtpAccount, insertFtpAccount } from '../store/ftp-accounts.ts';
import { changeObjects } from './common.ts';
import { ftpObject, loginOf } from './ftp-objects.ts';
import { defineOperation, kinds, optional, required } from './operation.ts';
import { results } from './results.ts';

export const addFtpAccount = defineOperation({
  name: 'add_ftp_account',
  summary: 'Create an FTP login confined to a directory of the home.',
  changesState: true,
  audiences: ['holder'],
  event: 'ftp_account.added',
  params: {
    login: required(kinds.ftpLogin, 'The login, before `@<main domain>` (the server adds the domain)'),
    password: required(kinds.password, 'Its password, for FTP over TLS'),
    directory: optional(
      kinds.ftpDirectory,
      'The directory it is confined to, relative to the home, made when missing; default the home',
    ),
    quota: optional(kinds.limit, 'Its quota in MB, or `unlimited` (the default)'),
  },
  example: { login: 'designer', password: 'Str0ng-Secret', directory: 'public_html' },
  result: results.ftpAccount,
  errors: ['limit_reached', 'object_exists'],
  async run(ctx, input) {
    if (input.quota === 0) throw invalid('quota', 'an FTP quota is at least 1 MB, or "unlimited"');
    // Hashed before the transaction: the account's row is not held while it is.
    const passwordHash = await ctx.services.crypt.hash(input.password);
    const { account, made } = await changeObjects(ctx, async (db, account, before) => {
      const login = loginOf(account, input.login);
      const name = `${login}@${account.domain}`;
      if (login === account.user)
        throw invalid('login', `${name} would read as the account's own login: choose another`);
      if (before.ftp_accounts.some((f) => f.login === login))
        throw apiError('object_exists', { kind: 'FTP account', name }, 'login');
      // Locked until the commit: the account's adds take turns on its limit.
      const limit = account.limits.ftp;
      if (limit !== null && before.ftp_accounts.length >= limit)
        throw apiError('limit_reached', { limit: 'ftp', value: formatLimit(limit) });
      const made: FtpAccount = {
        login,
        passwordHash,
        directory: input.directory ?? '',
        quota: input.quota ?? null,
        createdAt: ctx.services.now(),
      };
      try {
        await insertFtpAccount(db, account.user, made);
      } catch (error) {
        if (uniqueViolation(error) !== null)
          throw apiError('object_exists', { kind: 'FTP account', name }, 'login');
        throw error;
      }
      return { account, made };
    });
    const answer = ftpObject(account, made);
    return { data: answer, info: `FTP account ${answer.login} created` };
  },
});
