// Runs a command with BERTH_TEST_DATABASE_URL pointing at a throwaway PostgreSQL cluster, so that
// the store and operation tests run once more on the PostgreSQL dialect. Exits with the command's
// status; the cluster is removed whatever happens.
import { spawnSync } from 'node:child_process';
import { startCluster } from './pg-cluster.ts';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: node scripts/with-postgres.ts COMMAND [ARG]...\n');
  process.exit(2);
}
const cluster = await startCluster();
let status = 1;
try {
  const result = spawnSync(command, args, {
    stdio: 'inherit',
    env: { ...process.env, BERTH_TEST_DATABASE_URL: cluster.url },
  });
  status = result.status ?? 1;
} finally {
  cluster.stop();
}
process.exit(status);
