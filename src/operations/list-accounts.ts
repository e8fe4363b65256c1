import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Fleet } from '../fleet/fleet.ts';
import { listAccountsPage, type Scope } from '../store/accounts.ts';
import { changeCounter } from '../store/prepared.ts';
import type { Db } from '../store/schema.ts';
import { scopeOf } from './common.ts';
import { defineOperation } from './operation.ts';
import { listedRecord } from './record.ts';
import { results } from './results.ts';

const PAGE = 250;
/** Answers up to this size are kept for the next call, while the store has not changed. */
const CACHE_LIMIT = 32 * 1024 * 1024;

interface Cached {
  version: number;
  body: Buffer;
}

/** Per store and scope: the last answer, and the change counter it was built at. */
const answers = new WeakMap<object, Map<string, Cached>>();

/**
 * The answer, a page of accounts at a time, giving other calls their turn between pages: with
 * 100,000 accounts the body is some 90 MB, too much to build in one piece. Pages follow user-name
 * order, so an account that exists throughout is listed exactly once.
 */
async function* answer(
  db: Db,
  scope: Scope,
  fleet: Fleet,
  keep: (body: string) => void,
): AsyncIterable<string> {
  const pieces: string[] = [];
  let size = 0;
  const emit = (piece: string) => {
    if (size <= CACHE_LIMIT) pieces.push(piece);
    size += piece.length;
    return piece;
  };
  yield emit('{"data":{"accounts":{');
  let count = 0;
  let after = '';
  for (;;) {
    const page = await listAccountsPage(db, scope, after, PAGE);
    if (page.length === 0) break;
    let chunk = '';
    for (const account of page) {
      chunk += `${count++ === 0 ? '' : ','}${JSON.stringify(account.user)}:${JSON.stringify(listedRecord(account, fleet.hosting(account.server)))}`;
    }
    yield emit(chunk);
    after = page[page.length - 1]!.user;
    if (page.length < PAGE) break;
    await nextTurn();
  }
  yield emit(`}},"info":${JSON.stringify(`${count} account(s)`)},"status":200}`);
  if (size <= CACHE_LIMIT) keep(pieces.join(''));
}

export const listAccounts = defineOperation({
  name: 'listaccts',
  summary: 'Every account (under a reseller: the ones it owns), keyed by user name.',
  changesState: false,
  adminOnly: false,
  params: {},
  example: {},
  result: results.listedAccounts,
  errors: [],
  async run(ctx) {
    const scope = scopeOf(ctx.caller);
    const version = changeCounter(ctx.db);
    let cache = answers.get(ctx.services.store);
    if (!cache) {
      cache = new Map();
      answers.set(ctx.services.store, cache);
    }
    const key = scope?.owner ?? '';
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
