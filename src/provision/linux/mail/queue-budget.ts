// What an account may have waiting in Postfix's queue (CONTRACT §10: one account must not crowd
// out another). The queue (/var/spool/postfix) is outside every account's disk quota: mail an
// account sends to a destination that does not answer waits there for days, and an account that
// sends enough of it fills /var, and every other account's mail stops. So each account has a
// budget of bytes and of messages waiting; over it, Berth's milters answer its new mail with a
// temporary refusal (the client, or the account's program, tries again later).
//
// Whose mail a message is: its envelope sender's account, as the local-senders table says (an
// address of the account's domains, or its login completed with Postfix's myorigin). Only what
// Postfix itself enforces makes the sender the account's: SASL and reject_sender_login_mismatch
// on submission, postdrop's local_login_sender_maps for sendmail. Mail of no account (root's,
// the system's users', mail from outside) is never counted nor refused. A bounce waiting in the
// queue is the account's it returns to: what an account's mail brings back is its own too.
//
// A mailing list's mail is not its account's own: its envelope sender is one of the list's
// addresses (`<list>+bounces-…@<domain>`), in the account's domain, and a list sends to whoever its
// members are at the word of anyone who posts as one of them. Counted against the account, a post
// fanned out to members whose hosts do not answer would use up the account's budget and refuse the
// account's own mail. So an account's lists together have a budget of their own, beside the
// account's (keyed `<login>'s mailing lists`, which no login is), and mail to or from a list's
// address counts there and nowhere else. Together, not one a list: an account may have any number
// of lists, and its mail waiting in the queue stays bounded.
//
// What is waiting is learnt from `postqueue -j` every few seconds; what the milters accepted since
// that listing began is added to it, so that a burst between two listings is counted too. A
// listing is no snapshot: Postfix's showq reads the active queue before the incoming one, and the
// deferred after the active, so a message qmgr moves from incoming to active (or, to try it again,
// from deferred to active) while the listing runs is in neither directory when it is read. A
// message the last listing showed and this one does not is therefore counted once more, until the
// next listing says whether it is gone.
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { CONTINUE, type Envelope, type MilterPolicy, type Verdict } from './milter.ts';

/** The bounds, each null for none. */
export interface QueueLimits {
  /** Bytes of messages waiting (the queue files' message sizes). */
  bytes: number | null;
  messages: number | null;
}

/**
 * Whose mail a sender address is: an account's login, its mailing lists' key (listsKey), or null
 * when it is neither.
 */
export type SenderOwner = (sender: string) => string | null;

/** An address without its extension: `news+bounces-12-x=y.example@x.example` is `news@x.example`. */
export function baseAddress(address: string): string {
  const lower = address.toLowerCase();
  const at = lower.lastIndexOf('@');
  if (at === -1) return lower;
  const plus = lower.slice(0, at).indexOf('+');
  return plus === -1 ? lower : `${lower.slice(0, plus)}${lower.slice(at)}`;
}

const LISTS = "'s mailing lists";
/** The key of the budget of an account's mailing lists together. */
export const listsKey = (login: string) => `${login}${LISTS}`;
/** Whether a budget's key is an account's mailing lists' rather than an account's own (a login). */
export const isListsKey = (key: string) => key.endsWith(LISTS);

/**
 * The owner of each sender, from the local-senders table (`login login, @domain`, one line an
 * account): an address of one of its domains, or its login, bare (as sendmail gives it) or
 * completed with `origin` (Postfix's myorigin, as the queue has it).
 */
export function senderOwners(
  localSenders: string,
  origin: string,
  lists: ReadonlySet<string> = new Set(),
): SenderOwner {
  const byAddress = new Map<string, string>();
  const byDomain = new Map<string, string>();
  for (const line of localSenders.split('\n')) {
    const [login, ...rest] = line.trim().split(/[\s,]+/);
    if (!login || login.startsWith('#')) continue;
    for (const value of rest.map((v) => v.toLowerCase())) {
      if (value.startsWith('@')) byDomain.set(value.slice(1), login);
      else if (!value.includes('@')) {
        byAddress.set(value, login);
        byAddress.set(`${value}@${origin.toLowerCase()}`, login);
      }
    }
  }
  return (sender) => {
    const lower = sender.toLowerCase();
    if (lists.has(baseAddress(lower))) {
      const login = byDomain.get(lower.slice(lower.lastIndexOf('@') + 1));
      return login === undefined ? null : listsKey(login);
    }
    const domain = lower.includes('@') ? lower.slice(lower.lastIndexOf('@') + 1) : null;
    return byAddress.get(lower) ?? (domain === null ? null : (byDomain.get(domain) ?? null));
  };
}

/**
 * The owner of each sender, as `senderOwners` makes it from the local-senders table and the lists'
 * addresses, made again only when either changed. Every message the milters see asks it, as does
 * the queue's listing every few seconds: made afresh each time, the maps of 10,000 accounts cost
 * some 15 ms, three times a message.
 */
export function keptSenderOwners(
  localSenders: () => string,
  origin: string,
  lists: () => Iterable<string>,
): () => SenderOwner {
  let kept: { table: string; lists: string; owner: SenderOwner } | null = null;
  return () => {
    const table = localSenders();
    const addresses = [...lists()].map((address) => address.toLowerCase());
    const listed = addresses.join('\n');
    if (kept?.table !== table || kept.lists !== listed)
      kept = { table, lists: listed, owner: senderOwners(table, origin, new Set(addresses)) };
    return kept.owner;
  };
}

/**
 * One message of `postqueue -j` (a JSON object a line) and whose it is, or null for a line that is
 * none: its sender's, or, for a bounce (the null sender), that of the address it returns to. An
 * account's refused or undeliverable mail comes back to it as bounces, which wait in the queue
 * too when its own address does not take them.
 */
export function queuedMessage(
  line: string,
  owner: SenderOwner,
): { id: string; logins: string[]; size: number } | null {
  let entry: { queue_id?: unknown; sender?: unknown; message_size?: unknown; recipients?: unknown };
  try {
    entry = JSON.parse(line);
  } catch {
    return null;
  }
  if (
    typeof entry.queue_id !== 'string' ||
    typeof entry.sender !== 'string' ||
    typeof entry.message_size !== 'number'
  )
    return null;
  const recipients = (Array.isArray(entry.recipients) ? (entry.recipients as { address?: unknown }[]) : [])
    .map((recipient) => recipient.address)
    .filter((address) => typeof address === 'string');
  const bounce = entry.sender === '' || entry.sender === 'MAILER-DAEMON';
  // Mail waiting to reach an account's own mailbox is that account's too: an account that makes
  // its mailbox refuse delivery (a Maildir it made unwritable) keeps its mail waiting for days.
  const owners = [...(bounce ? [] : [owner(entry.sender)]), ...recipients.map(owner)];
  const logins = [...new Set(owners.filter((login) => login !== null))];
  return { id: entry.queue_id, logins, size: entry.message_size };
}

/** Bytes and messages of one account's. */
export interface QueueUsage {
  bytes: number;
  messages: number;
}

/**
 * A message the milters accepted is counted until a listing shows it by its queue ID, or, when none
 * does, until one begun this long after it (it was delivered before): Postfix writes the queue
 * file's last records just after the milter's answer, later still on a busy server, and a message
 * dropped from the count before it is listed would let a burst past the budget.
 */
const LISTING_GRACE_MS = 10_000;

/** One message a listing showed: whose it is, and its size. */
export interface ListedMessage {
  logins: readonly string[];
  size: number;
}

/** What a listing of the queue found: each message, by its queue ID. */
export interface QueueListing {
  messages: ReadonlyMap<string, ListedMessage>;
  /** When the listing began. */
  takenAt: number;
}

export interface QueueBudget {
  /** The bounds of one key's budget (a list's, or an account's). */
  limits(key: string): QueueLimits;
  /** What the queue held: it replaces the last listing; what the milters accepted and it saw is in it. */
  observe(listing: QueueListing): void;
  /** What the account has waiting, as far as Berth knows. */
  usage(login: string): QueueUsage;
  /** Whether a message of `size` bytes more (0 when not yet known) keeps the account in budget. */
  allows(login: string, size: number): boolean;
  /** A message the milters let by (`id`: its queue ID): counted at once, before the next is decided. */
  accepted(login: string, size: number, id: string): void;
}

/**
 * The budgets: `limits` each account's, `listLimits` those of each account's mailing lists together
 * (the accounts' by default).
 */
export function queueBudget(
  limits: QueueLimits,
  now: () => number = Date.now,
  listLimits: QueueLimits = limits,
): QueueBudget {
  const limitsOf = (key: string) => (isListsKey(key) ? listLimits : limits);
  /** The last listing's messages, and what they and those it missed of the one before add up to. */
  let listed: ReadonlyMap<string, ListedMessage> = new Map();
  let waiting = new Map<string, QueueUsage>();
  let since: { login: string; size: number; id: string; at: number }[] = [];
  const usage = (login: string): QueueUsage => {
    const counted = waiting.get(login) ?? { bytes: 0, messages: 0 };
    const recent = since.filter((entry) => entry.login === login);
    return {
      bytes: counted.bytes + recent.reduce((sum, entry) => sum + entry.size, 0),
      messages: counted.messages + recent.length,
    };
  };
  return {
    observe(listing) {
      const missed = [...listed].filter(([id]) => !listing.messages.has(id)).map(([, message]) => message);
      waiting = new Map();
      for (const message of [...listing.messages.values(), ...missed])
        for (const login of message.logins) {
          const entry = waiting.get(login) ?? { bytes: 0, messages: 0 };
          entry.bytes += message.size;
          entry.messages += 1;
          waiting.set(login, entry);
        }
      listed = listing.messages;
      since = since.filter(
        (entry) => !listing.messages.has(entry.id) && entry.at >= listing.takenAt - LISTING_GRACE_MS,
      );
    },
    usage,
    limits: limitsOf,
    allows(login, size) {
      const limits = limitsOf(login);
      const { bytes, messages } = usage(login);
      if (limits.messages !== null && messages >= limits.messages) return false;
      if (limits.bytes === null) return true;
      // A message larger than the whole budget still goes when nothing else of the account's waits.
      return size === 0 ? bytes < limits.bytes : bytes === 0 || bytes + size <= limits.bytes;
    },
    accepted(login, size, id) {
      since.push({ login, size, id, at: now() });
    },
  };
}

/** The limits as a reply names them. */
function described(limits: QueueLimits): string {
  const parts = [
    limits.bytes === null ? null : `${Math.round(limits.bytes / 1_048_576)} MB`,
    limits.messages === null ? null : `${limits.messages} message${limits.messages === 1 ? '' : 's'}`,
  ];
  return parts.filter(Boolean).join(' or ');
}

/** How mail over budget is refused: for now (a client tries again), or for good (returned). */
export type Refusal = 'tempfail' | 'reject';

/**
 * How often an account's mail over budget is returned to it (`reject`); the rest of its mail over
 * budget in between is dropped. Each return is a bounce waiting in the queue when the account's
 * address does not take it: returning every message would let a loop of sendmail fill the queue
 * with bounces instead.
 */
const RETURN_EVERY_MS = 60_000;

/**
 * `policy`, and then the budget, for the mail `counts` picks: refused when its sender's account
 * is over budget, at MAIL FROM and again at the end, when the message's size is known; counted
 * when let by. An SMTP client is told to try again later; mail from sendmail is returned to its
 * sender (`reject`): Postfix keeps mail a milter tempfails in the maildrop and offers it again at
 * once, over and over, and the maildrop fills as the queue would have. Of that, one message a
 * minute is returned, the rest dropped (RETURN_EVERY_MS).
 */
export function withQueueBudget(
  policy: MilterPolicy,
  budget: QueueBudget,
  owners: () => SenderOwner,
  counts: (envelope: Envelope) => boolean,
  refusal: Refusal = 'tempfail',
  now: () => number = Date.now,
): MilterPolicy {
  const returned = new Map<string, number>();
  const full = (login: string): Verdict => {
    if (refusal === 'reject') {
      const last = returned.get(login);
      if (last !== undefined && now() - last < RETURN_EVERY_MS) return { action: 'discard' };
      returned.set(login, now());
    }
    return refusal === 'tempfail'
      ? {
          action: 'tempfail',
          reply: `452 4.3.1 Mail of ${login} waiting to be sent is at its limit (${described(budget.limits(login))}); try again later`,
        }
      : {
          action: 'reject',
          reply: `550 5.3.1 Mail of ${login} waiting to be sent is at its limit (${described(budget.limits(login))}); this message is returned`,
        };
  };
  const ownerOf = (envelope: Envelope) =>
    envelope.sender && counts(envelope) ? owners()(envelope.sender) : null;
  return {
    readsBody: true,
    async mailFrom(envelope) {
      const verdict = await policy.mailFrom(envelope);
      if (verdict.action !== 'continue') return verdict;
      const login = ownerOf(envelope);
      return login === null || budget.allows(login, 0) ? CONTINUE : full(login);
    },
    async endOfMessage(envelope) {
      const verdict = await policy.endOfMessage(envelope);
      if (verdict.action !== 'continue') return verdict;
      const login = ownerOf(envelope);
      if (login !== null && !budget.allows(login, envelope.size)) return full(login);
      // Over SMTP, mail for an account whose mail already waits at its limit waits with its sender
      // instead (a bounce returning to it too): its mailbox is not taking what it is given.
      const owner = owners();
      const recipients = [...new Set((envelope.recipients ?? []).map(owner).filter((r) => r !== null))];
      if (refusal === 'tempfail')
        for (const recipient of recipients)
          if (recipient !== login && !budget.allows(recipient, envelope.size))
            return {
              action: 'tempfail',
              reply: `452 4.2.2 Mail for ${recipient} waiting to be delivered is at its limit (${described(budget.limits(recipient))}); try again later`,
            };
      const id = envelope.macros.get('i') ?? '';
      for (const account of new Set([...(login === null ? [] : [login]), ...recipients]))
        budget.accepted(account, envelope.size, id);
      return CONTINUE;
    },
  };
}

/**
 * Gives the budget what each account has waiting from `listing`, the output of `postqueue -j`
 * started just now. Read line by line as it comes: the text of a queue of many thousand messages
 * is never joined whole.
 */
export async function listQueue(
  listing: { output: Readable; done: Promise<void> },
  budget: QueueBudget,
  owner: SenderOwner,
  now: () => number = Date.now,
): Promise<void> {
  const takenAt = now();
  const { output, done } = listing;
  const messages = new Map<string, ListedMessage>();
  for await (const line of createInterface({ input: output, crlfDelay: Number.POSITIVE_INFINITY })) {
    const message = queuedMessage(line, owner);
    if (message?.logins.length) messages.set(message.id, message);
  }
  await done;
  budget.observe({ messages, takenAt });
}
