// The answer of a call that lists accounts (listaccts, usagestatistics), streamed a page at a time
// in user-name order: with 100,000 accounts the body is some 90 MB, too much to build in one piece
// or to hold as objects. Other calls get their turn between pages, and an account that exists
// throughout is listed exactly once.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Account, listAccountsPage, type Scope } from '../store/accounts.ts';
import type { Db } from '../store/schema.ts';

const PAGE = 250;
const PIECE = 32 * 1024;

/** Every account in `scope`, a page at a time. */
export async function* accountPages(db: Db, scope: Scope): AsyncIterable<Account[]> {
  let after = '';
  for (;;) {
    const page = await listAccountsPage(db, scope, after, PAGE);
    if (page.length > 0) yield page;
    if (page.length < PAGE) return;
    after = page[page.length - 1]!.user;
    await nextTurn();
  }
}

/**
 * `{"data":{"accounts":{…}},"info":…,"status":200}`, each account's entry rendered by `entry`
 * (given its page, for what it needs to read about the page at once), piece by piece; `info`
 * names the count.
 */
export async function* streamAccounts(
  db: Db,
  scope: Scope,
  entries: (page: Account[]) => Promise<unknown[]> | unknown[],
  info: (count: number) => string,
): AsyncIterable<string> {
  yield '{"data":{"accounts":{';
  let count = 0;
  for await (const page of accountPages(db, scope)) {
    const values = await entries(page);
    // Pieces of some 32 kB: V8 keeps a string of more than 128 kB as a large object, which only a
    // full collection frees; smaller ones die young, and the process does not grow by the body.
    let chunk = '';
    for (const [i, account] of page.entries()) {
      chunk += `${count++ === 0 ? '' : ','}${JSON.stringify(account.user)}:${JSON.stringify(values[i])}`;
      if (chunk.length >= PIECE) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk !== '') yield chunk;
  }
  yield `}},"info":${JSON.stringify(info(count))},"status":200}`;
}
