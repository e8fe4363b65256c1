// Single sign-on tokens in the store (CONTRACT §14): of the servers sharing a store, each taking the
// same token at once, exactly one gets it; the others, like any later take, get null.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { openStore, type Store } from '../../src/store/open.ts';
import { issueSsoToken, takeSsoToken } from '../../src/store/sso-tokens.ts';
import { postgresForTest, tempDir } from '../helpers.ts';

const now = new Date('2026-11-25T10:00:00.000Z');
const expires = new Date(now.getTime() + 120_000);

/** Two servers' handles on one store: each takes the same token ten times at once. */
async function race(servers: readonly Store[]): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const token = await issueSsoToken(servers[0]!.db, { user: 'alice', page: 'databases', expires }, now);
    const takes = servers.flatMap((server) =>
      Array.from({ length: 10 }, () => takeSsoToken(server.db, token, new Date(now.getTime() + 1000))),
    );
    const granted = (await Promise.all(takes)).filter((grant) => grant !== null);
    assert.deepEqual(granted, [{ user: 'alice', page: 'databases' }], `round ${round}`);
  }
  const left = await servers[1]!.db.selectFrom('sso_tokens').selectAll().execute();
  assert.deepEqual(left, []);
}

describe('single sign-on tokens taken by two servers at once', () => {
  it('on one PostgreSQL store: exactly one take gets the token', async () => {
    const database = await postgresForTest();
    const dataDir = tempDir('berth-sso-');
    const servers: Store[] = [];
    try {
      // One after the other: the second finds the migrations done.
      for (let i = 0; i < 2; i++) servers.push(await openStore(dataDir, database.url));
      await race(servers);
    } finally {
      for (const server of servers) await server.close();
      await database.release();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('on one SQLite file: exactly one take gets the token', async () => {
    const dataDir = tempDir('berth-sso-');
    const servers: Store[] = [];
    try {
      for (let i = 0; i < 2; i++) servers.push(await openStore(dataDir));
      await race(servers);
    } finally {
      for (const server of servers) await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
