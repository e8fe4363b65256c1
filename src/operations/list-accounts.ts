import type { Fleet } from '../fleet/fleet.ts';
import type { Scope } from '../store/accounts.ts';
import { changeCounter } from '../store/prepared.ts';
import type { Db } from '../store/schema.ts';
import { streamAccounts } from './listing.ts';
import { defineOperation } from './operation.ts';
import { scopeOf } from './principal.ts';
import { listedRecord } from './record.ts';
import { results } from './results.ts';

/**
 * Answers up to this size (some 10,000 accounts) are kept for the next call, while the store has not
 * changed. What is gathered toward it lives until the answer ends: more would grow the heap.
 */
const CACHE_LIMIT = 8 * 1024 * 1024;

interface Cached {
  version: string;
  body: Buffer;
}

/** Per store and scope: the last answer, and the change counter it was built at. */
const answers = new WeakMap<object, Map<string, Cached>>();

/** The answer, streamed; kept for the next call when it is small enough. */
async function* answer(
  db: Db,
  scope: Scope,
  fleet: Fleet,
  keep: (body: string) => void,
): AsyncIterable<string> {
  const pieces: string[] = [];
  let size = 0;
  const listing = streamAccounts(
    db,
    scope,
    (page) => page.map((account) => listedRecord(account, fleet.hosting(account.server))),
    (count) => `${count} account(s)`,
  );
  for await (const piece of listing) {
    size += piece.length;
    // Past the limit, what was gathered goes at once: memory stays bounded whatever the count.
    if (size <= CACHE_LIMIT) pieces.push(piece);
    else pieces.length = 0;
    yield piece;
  }
  if (size <= CACHE_LIMIT) keep(pieces.join(''));
}

export const listAccounts = defineOperation({
  name: 'listaccts',
  summary: 'Every account (under a reseller: the ones it owns), keyed by user name.',
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.listedAccounts,
  errors: [],
  async run(ctx) {
    const scope = scopeOf(ctx.principal);
    const version = changeCounter(ctx.db);
    let cache = answers.get(ctx.services.store);
    if (!cache) {
      cache = new Map();
      answers.set(ctx.services.store, cache);
    }
    const key = scope === null ? '' : 'user' in scope ? `=${scope.user}` : scope.owner;
    const cached = cache.get(key);
    if (version !== null && cached?.version === version) return { data: null, info: '', body: cached.body };
    const keep = (body: string) => {
      if (version === null) return;
      if (cache.size >= 16) cache.clear();
      cache.set(key, { version, body: Buffer.from(body) });
    };
    return { data: null, info: '', stream: answer(ctx.db, scope, ctx.services.fleet, keep) };
  },
});
