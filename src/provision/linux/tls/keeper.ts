// The certificate keeper: obtains each domain's certificate from the configured ACME directory
// (Let's Encrypt unless set) after createacct has answered, never inside a call, and renews it 30
// days before it expires. One order at a time; http-01, the challenge file written where nginx
// serves /.well-known/acme-challenge/ for every domain. A failure waits longer each time (1 minute,
// 5, 30, 2 hours, 6, then daily; at least 3 hours after the server says rateLimited), so a domain
// that does not point here yet never turns into a stream of failed orders. One account's domains
// place at most `[acme] orders_per_account_hour` orders in an hour (the ACME server's limits are
// the server's one ACME account's): the rest wait, keeping their fallback certificate. The ACME
// account key is <data-dir>/acme/account-key.pem, 0600, ECDSA P-256.
//
// Orders wait for the calls to pause: one starts once no new domain has come for 2 s, or once the
// keeper has held its orders back for 5 minutes (a server that never pauses still gets its
// certificates). An order costs the server's thread about as much as a createacct (ten signed
// requests, their TLS connections): during a burst of createacct from billing, orders one after
// another took a tenth or more of that thread from the calls. The burst's certificates come after
// it, each domain served with its fallback certificate until then, as while its order waits.
import { join } from 'node:path';
import * as acme from 'acme-client';
import type { Account } from '../../../store/accounts.ts';
import type { AccountSource, BackgroundLog } from '../../driver.ts';
import type { LinuxContext } from '../context.ts';
import { makePrivateDirectory, readIfExists, removeFile, writeFileAtomic } from '../files.ts';
import { describeCertificate, type TlsComponent } from './component.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const BACKOFF = [MINUTE, 5 * MINUTE, 30 * MINUTE, 120 * MINUTE, 360 * MINUTE, DAY];
const RATE_LIMITED = 180 * MINUTE;
export const RENEW_BEFORE = 30 * DAY;

// acme-client retries a failed request itself, five times 5 to 25 seconds apart (75 s in all)
// unless the server says Retry-After: twice, 2 and 4 seconds apart, is enough before the keeper's
// own backoff takes over.
const settings = (acme.axios.defaults as unknown as { acmeSettings: Record<string, number> }).acmeSettings;
settings.retryMaxAttempts = 2;
settings.retryDefaultDelay = 2;
/** How long a new domain waits for its createacct to commit before the keeper lets it go. */
const COMMIT_GRACE = 10 * MINUTE;
const HOUR = 60 * MINUTE;

interface Due {
  user: string;
  at: number;
  /** When createacct made the fallback certificate (the account may not be committed yet). */
  watched: number | null;
}

export interface CertificateKeeper {
  /**
   * A domain with a new certificate here (`account.domain`: the main domain or another of the
   * account's): obtain one soon (a fallback) or renew it when due.
   */
  watch(account: Account): void;
  close(): Promise<void>;
}

/** How long the calls must pause before an order starts, and how long at most orders wait for it. */
export interface KeeperPace {
  quietMs: number;
  longestWaitMs: number;
}

const PACE: KeeperPace = { quietMs: 2_000, longestWaitMs: 5 * MINUTE };

export function certificateKeeper(
  ctx: LinuxContext,
  tls: TlsComponent,
  store: AccountSource,
  log: BackgroundLog,
  pace: KeeperPace = PACE,
): CertificateKeeper {
  const { config, linux } = ctx;
  const due = new Map<string, Due>();
  /** When each account's orders of the last hour were placed, oldest first. */
  const ordered = new Map<string, number[]>();
  /** When the account may place its next order (now, unless its hour's orders are used up). */
  const orderAllowedAt = (user: string, now: number) => {
    const recent = (ordered.get(user) ?? []).filter((at) => at > now - HOUR);
    ordered.set(user, recent);
    return recent.length < config.acme.ordersPerAccountHour ? now : recent[0]! + HOUR;
  };
  let client: acme.Client | null = null;
  let running: Promise<void> | null = null;
  let closed = false;
  /** When a domain last came (watch), and since when orders have been held back for the calls. */
  let lastWatched = 0;
  let heldSince: number | null = null;
  let later: ReturnType<typeof setTimeout> | null = null;
  /**
   * Whether an order may start now; if not, the keeper looks again once it may. Not while calls
   * bring domains, unless orders have waited for them the longest they may.
   */
  const mayOrder = (now: number) => {
    if (now - lastWatched >= pace.quietMs) return true;
    heldSince ??= now;
    if (now - heldSince >= pace.longestWaitMs) return true;
    if (later) clearTimeout(later);
    const wait = Math.min(lastWatched + pace.quietMs, heldSince + pace.longestWaitMs) - now;
    later = setTimeout(tick, Math.max(50, wait));
    later.unref();
    return false;
  };

  async function acmeClient(): Promise<acme.Client> {
    if (client) return client;
    const keyDir = join(config.dataDir, 'acme');
    const keyFile = join(keyDir, 'account-key.pem');
    // In the data directory, root's alone like everything there (one made 0755 before is closed).
    makePrivateDirectory(keyDir);
    let accountKey = readIfExists(keyFile);
    if (accountKey === null) {
      // ECDSA P-256: every request to the ACME server is signed with it (about ten an order), and
      // an ES256 signature costs about a sixth of an RSA 2048 one. A key made before (RSA) is kept.
      accountKey = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
      writeFileAtomic(keyFile, accountKey, 0o600);
    }
    // The library's own retries (a bad nonce, a busy server) are kept short: the keeper's
    // backoff is what spaces attempts out.
    client = new acme.Client({
      directoryUrl: config.acme.directory,
      accountKey,
      backoffAttempts: 3,
      backoffMin: 1000,
      backoffMax: 5000,
    });
    return client;
  }

  const challengeFile = (token: string) => {
    if (!/^[A-Za-z0-9_-]+$/.test(token)) throw new Error('the ACME server sent an unusable challenge token');
    return ctx.path(join(linux.acmeChallengeDir, token));
  };

  async function obtain(account: Account): Promise<void> {
    const { domain } = account;
    const state = tls.readState(domain);
    if (state === null) return; // removed meanwhile
    try {
      const [key, csr] = await acme.crypto.createCsr(
        { commonName: domain, altNames: tls.names(domain) },
        await acme.crypto.createPrivateEcdsaKey('P-256'),
      );
      const chain = await (await acmeClient()).auto({
        csr,
        ...(config.acme.email && { email: config.acme.email }),
        termsOfServiceAgreed: true,
        challengePriority: ['http-01'],
        // The ACME server checks the challenge itself; a check from here would need this server's
        // own DNS to resolve the domain already.
        skipChallengeVerification: true,
        challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
          if (challenge.type === 'http-01')
            writeFileAtomic(challengeFile(challenge.token), keyAuthorization, 0o644);
        },
        challengeRemoveFn: async (_authz, challenge) => {
          if (challenge.type === 'http-01') removeFile(challengeFile(challenge.token));
        },
      });
      const described = describeCertificate(chain);
      const next = new Date(Date.parse(described.notAfter) - RENEW_BEFORE).toISOString();
      // Renamed over the fallback: nginx's workers read it from the next handshake on, no reload.
      const installed = tls.install(domain, `${chain.trim()}\n${key.toString().trim()}\n`, {
        state: 'valid',
        ...described,
        attempts: 0,
        nextAttempt: next,
        lastError: null,
      });
      if (!installed) return;
      due.set(domain, { user: account.user, at: Date.parse(next), watched: null });
      log.info({ domain, issuer: described.issuer, notAfter: described.notAfter }, 'certificate obtained');
    } catch (error) {
      const attempts = state.attempts + 1;
      // acme-client turns an unreachable server into a TypeError about its own request config.
      const raw =
        error instanceof TypeError
          ? `the ACME server at ${config.acme.directory} did not answer`
          : (error as Error).message;
      const message = raw.replace(/\s+/g, ' ').slice(0, 500);
      let wait = BACKOFF[Math.min(attempts, BACKOFF.length) - 1]!;
      if (/rateLimited|rate limit/i.test(message)) wait = Math.max(wait, RATE_LIMITED);
      const next = new Date(Date.now() + wait).toISOString();
      if (tls.readState(domain) === null) return;
      tls.writeState(domain, {
        ...state,
        state: state.state === 'valid' ? 'valid' : 'failed',
        attempts,
        nextAttempt: next,
        lastError: message,
      });
      due.set(domain, { user: account.user, at: Date.now() + wait, watched: null });
      log.warn(
        { domain, attempts, nextAttempt: next, error: message },
        'certificate not obtained; will retry',
      );
    }
  }

  async function work(): Promise<void> {
    const now = Date.now();
    if (!mayOrder(now)) return;
    const ready = [...due.entries()].filter(([, d]) => d.at <= now).sort((a, b) => a[1].at - b[1].at);
    for (const [domain, entry] of ready) {
      if (closed) return;
      const account = await store.account(entry.user);
      const served = account && (await store.objects(account.user)).domains.some((d) => d.domain === domain);
      if (!account || (account.domain !== domain && !served)) {
        // Not committed yet (the call is still running), or gone: look again shortly, for a while.
        if (entry.watched !== null && now - entry.watched < COMMIT_GRACE) entry.at = now + 1000;
        else due.delete(domain);
        continue;
      }
      const allowed = orderAllowedAt(account.user, now);
      if (allowed > now) {
        if (entry.at < allowed)
          log.warn(
            { domain, user: account.user, nextAttempt: new Date(allowed).toISOString() },
            "certificate waits: the account's orders of the hour are used up",
          );
        entry.at = allowed;
        continue;
      }
      if (!mayOrder(Date.now())) return;
      ordered.get(account.user)!.push(now);
      await obtain({ ...account, domain });
    }
    heldSince = null;
  }

  function tick(): void {
    if (running || closed) return;
    running = work()
      .catch((error: unknown) => log.warn({ error: (error as Error).message }, 'certificate keeper failed'))
      .finally(() => {
        running = null;
      });
  }

  // Every domain's next attempt (or renewal), from the state files, once at start.
  void (async () => {
    for (const account of await store.accounts()) {
      const { domains } = await store.objects(account.user);
      for (const domain of new Set([account.domain, ...domains.map((d) => d.domain)])) {
        const state = tls.readState(domain);
        if (state) due.set(domain, { user: account.user, at: Date.parse(state.nextAttempt), watched: null });
      }
    }
  })()
    .catch((error: unknown) => log.warn({ error: (error as Error).message }, 'certificate keeper failed'))
    .finally(tick);
  const timer = setInterval(tick, config.acme.checkSeconds * 1000);
  timer.unref();

  return {
    watch(account) {
      lastWatched = Date.now();
      const next = Date.parse(tls.readState(account.domain)?.nextAttempt ?? '');
      const at = Math.max(Date.now() + 500, Number.isNaN(next) ? 0 : next);
      due.set(account.domain, { user: account.user, at, watched: Date.now() });
      setTimeout(tick, 600).unref();
    },
    async close() {
      closed = true;
      clearInterval(timer);
      if (later) clearTimeout(later);
      await running;
    },
  };
}
