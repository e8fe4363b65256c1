// Postfix's settings for Berth's mail (main.cf with postconf -e, the submission service in
// master.cf), set whenever Berth starts: the tables it asks Berth for (socketmap.ts), Dovecot for
// logins and delivery, Berth's milters, and what an account may send through each way in.
import { join } from 'node:path';
import type { LinuxContext } from '../context.ts';
import { removeFile } from '../files.ts';
import type { PostfixTable } from './lines.ts';
import { DKIM_SOCKET, LOCAL_SOCKET, POLICY_SOCKET } from './milters.ts';
import { ORIGINATING } from './sender-policy.ts';
import { OLD_TABLE_FILES, postfixMap } from './socketmap.ts';

/** Sets Postfix's parameters and its submission service; `certificate` is the host's. */
export async function configurePostfix(ctx: LinuxContext, certificate: string): Promise<void> {
  const { linux, runner } = ctx;
  const maps = (table: PostfixTable | 'localSenders') => postfixMap(linux, table);
  await runner.run([
    '/usr/sbin/postconf',
    '-e',
    `virtual_mailbox_domains=${maps('domains')}`,
    `virtual_mailbox_maps=${maps('mailboxes')}`,
    // The holder's forwarders.
    `virtual_alias_maps=${maps('aliases')}`,
    'virtual_transport=lmtp:unix:private/dovecot-lmtp',
    'smtpd_sasl_type=dovecot',
    'smtpd_sasl_path=private/auth',
    `smtpd_tls_cert_file=${certificate}`,
    `smtpd_tls_key_file=${certificate}`,
    'smtpd_tls_security_level=may',
    // Port 25: a hosted domain as sender only when SPF passes (the sender-policy milter).
    `smtpd_milters=unix:${POLICY_SOCKET}`,
    // A milter that does not answer holds mail back (the client tries again), never lets it by.
    'milter_default_action=tempfail',
    // The queue is root's to read and flush: its envelopes name every tenant's correspondents.
    'authorized_mailq_users=root',
    'authorized_flush_users=root',
    // Local mail to an account's user goes to its mailbox (the aliases table takes it in:
    // socketmap.ts), the system's as before.
    'alias_maps=hash:/etc/aliases',
    // A system user's /var/mail file (root's, www-data's) is bounded: Postfix's own default, which
    // Debian lifts; any program of the server, an account's PHP among them, may write to them.
    'mailbox_size_limit=52428800',
    // Delivery notices on port 25 would wait for days for a sender no account owns, outside every
    // account's budget: not offered there (submission keeps them, counted as the account's).
    'smtpd_discard_ehlo_keywords=silent-discard, dsn',
    // sendmail -f: an account only as itself (local-senders); root and the system's own
    // users (not accounts, not in the table) as before.
    `local_login_sender_maps=${maps('localSenders')}, static:*`,
    // Mail from sendmail: no other account's domain in From, and the account's queue budget
    // (cleanup asks the local milter).
    `non_smtpd_milters=unix:${LOCAL_SOCKET}`,
  ]);
  // master.cf names a service by where it listens: 587 on every address, or ADDRESS:PORT.
  const listen =
    linux.mailAddress === '*' ? String(linux.submissionPort) : `${linux.mailAddress}:${linux.submissionPort}`;
  const service = `${listen}/inet`;
  await runner.run(['/usr/sbin/postconf', '-M', `${service}=${listen} inet n - y - - smtpd`]);
  // Authenticated clients only, each sending as its own domain (envelope: Postfix, and the
  // milter again; header From: the milter alone), never the null sender, signed on the way out
  // by OpenDKIM, which signs only what carries this service's daemon name.
  await runner.run([
    '/usr/sbin/postconf',
    '-P',
    ...[
      'syslog_name=postfix/submission',
      'smtpd_tls_security_level=encrypt',
      'smtpd_sasl_auth_enable=yes',
      'smtpd_tls_auth_only=yes',
      'smtpd_client_restrictions=permit_sasl_authenticated,reject',
      'smtpd_relay_restrictions=permit_sasl_authenticated,reject',
      `smtpd_sender_login_maps=${maps('senders')}`,
      'smtpd_sender_restrictions=reject_sender_login_mismatch,check_sender_access,inline:{<>=REJECT}',
      `milter_macro_daemon_name=${ORIGINATING}`,
      'smtpd_discard_ehlo_keywords=',
      `smtpd_milters=unix:${POLICY_SOCKET},unix:${DKIM_SOCKET}`,
    ].map((option) => `${service}/${option}`),
  ]);
  // Postfix asks Berth for its tables now (socketmap.ts): an older Berth's files go, once no
  // setting names them (its processes still running end at the reload that follows prepare).
  for (const old of OLD_TABLE_FILES) removeFile(ctx.path(join(linux.postfixMapDir, old)));
}
