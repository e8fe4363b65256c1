// @ts-check
// The store's writer connection in a thread of its own, for a long-running server: a commit waits
// here for the disk (synchronous = FULL), and so does a WAL checkpoint, not on the event loop every
// other call is served from.
// Statements come one at a time from the dialect ({ id, sql, parameters }), which holds the writer
// for one holder at a time. JavaScript, like connection.js: see there.
import { parentPort, workerData } from 'node:worker_threads';
import { Connection, openWriter } from './connection.js';

/** @typedef {{ id: number; sql: string; parameters: unknown[] }} Request */

const connection = new Connection(openWriter(/** @type {{ path: string }} */ (workerData).path));
const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);

port.on('message', (/** @type {Request | 'close'} */ message) => {
  if (message === 'close') {
    connection.db.close();
    port.close();
    return;
  }
  try {
    port.postMessage({ id: message.id, outcome: connection.execute(message.sql, message.parameters) });
  } catch (error) {
    const {
      message: text,
      code,
      errcode,
    } = /** @type {Error & { code?: string; errcode?: number }} */ (error);
    port.postMessage({ id: message.id, error: { message: String(text), code, errcode } });
  }
});
port.postMessage('ready');
