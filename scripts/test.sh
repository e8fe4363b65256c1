#!/bin/sh
# npm test: the type gate, the linter, then every test. npm puts the pinned Node 24 first on PATH.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup-system.sh
echo "== type-check (tsc --noEmit)"
tsc --noEmit -p .
echo "== lint (biome)"
biome check .
echo "== tests (node --test)"
node --test --test-concurrency=2 --test-reporter=spec 'test/**/*.test.ts'
