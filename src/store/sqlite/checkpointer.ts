// Runs in a worker thread beside the server: copies the write-ahead log back into the database
// (a WAL checkpoint) every second on its own connection, so that no API call waits while the
// server's writer does it on the event loop.
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new DatabaseSync(path);
db.exec('PRAGMA busy_timeout = 1000');
const timer = setInterval(() => {
  try {
    // PASSIVE: never waits for readers or writers; what it cannot copy now, it copies next time.
    db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get();
  } catch (error) {
    parentPort?.postMessage({ error: String(error) });
  }
}, intervalMs);
parentPort?.on('message', (message) => {
  if (message === 'stop') {
    clearInterval(timer);
    db.close();
    process.exit(0);
  }
});
