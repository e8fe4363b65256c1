// The store's writer connection in a thread of its own, for a long-running server: a commit waits
// here for the disk (synchronous = FULL), and so does a WAL checkpoint, not on the event loop every
// other call is served from.
// Statements come one at a time from the dialect, which holds the writer for one holder at a time.
import { parentPort, workerData } from 'node:worker_threads';
import { Connection, openWriter } from './connection.ts';

export interface Request {
  id: number;
  sql: string;
  parameters: unknown[];
}

const { path } = workerData as { path: string };
const connection = new Connection(openWriter(path));
const port = parentPort!;

port.on('message', (message: Request | 'close') => {
  if (message === 'close') {
    connection.db.close();
    port.close();
    return;
  }
  try {
    port.postMessage({ id: message.id, outcome: connection.execute(message.sql, message.parameters) });
  } catch (error) {
    const { message: text, code, errcode } = error as Error & { code?: string; errcode?: number };
    port.postMessage({ id: message.id, error: { message: String(text), code, errcode } });
  }
});
port.postMessage('ready');
