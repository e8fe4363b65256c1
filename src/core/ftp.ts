// An FTP account's values (CONTRACT §14): its login, the part before `@<main domain>` (given with
// or without the domain), and its directory, relative to the home by the rules of a document root
// (never absolute, never `..`, no hidden name, not the mail or a jail's directory). Whether a
// directory on the way is a link is for the server to see when it makes it: it never follows one.
import { invalid } from './errors.ts';
import { parseDocroot } from './values.ts';

/** Lower-case letters, digits and . _ -, starting and ending with a letter or digit; 1 to 32. */
const FTP_LOGIN = /^[a-z0-9]([a-z0-9._-]{0,30}[a-z0-9])?$/;

/** `name` or `name@domain`, in any case: the lower-case name, and the domain when one was given. */
export function parseFtpLogin(param: string, raw: string): { login: string; domain: string | null } {
  const lower = raw.trim().toLowerCase();
  const at = lower.indexOf('@');
  const login = at === -1 ? lower : lower.slice(0, at);
  const domain = at === -1 ? null : lower.slice(at + 1);
  if (!FTP_LOGIN.test(login))
    throw invalid(
      param,
      'a login is 1 to 32 lower-case letters, digits and . _ -, starting and ending with a letter or digit (the server adds @<main domain>)',
    );
  return { login, domain };
}

/** An FTP account's directory below the home, as parseDocroot checks a document root. */
export function parseFtpDirectory(param: string, raw: string): string {
  return parseDocroot(param, raw);
}
