#!/bin/sh
# npm test: the type gate, the linter, then every test file in lanes (scripts/test-lanes.ts: the
# fast files beside the sandboxes, the browser, the benchmark smoke and WHMCS, each file with a time
# limit); then the store and operation tests once more on PostgreSQL. npm puts the pinned Node 24
# first on PATH.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup-system.sh
echo "== type-check (tsc --noEmit)"
tsc --noEmit -p .
echo "== lint (biome)"
biome check .
echo "== tests on the SQLite store, in lanes (scripts/test-lanes.ts)"
node scripts/test-lanes.ts
echo "== store and operation tests on PostgreSQL (node --test)"
node scripts/with-postgres.ts node --test --test-concurrency=2 --test-reporter=spec \
  'test/store/*.test.ts' 'test/operations/*.test.ts' 'test/http/*.test.ts' test/concurrency.test.ts \
  test/portal/session.test.ts test/portal/accounts.test.ts test/security.test.ts \
  test/panel/session.test.ts test/panel/pages.test.ts
