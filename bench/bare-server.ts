// The ceiling Berth is measured against: a bare Node HTTPS server with the same certificate,
// keep-alive and envelope, answering from bodies built in advance. Started by run.ts; prints
// "ready <port>" when it listens.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';

const [certPath, keyPath, listBodyPath] = process.argv.slice(2);
const envelope = (data: unknown, info: string) => Buffer.from(JSON.stringify({ data, info, status: 200 }));

const bodies: Record<string, Buffer> = {
  test_connection: envelope({ test: 'Connection successful' }, 'Connection successful'),
  createacct: envelope(
    { user: 'x'.repeat(8), domain: 'x.example', contactemail: 'x@example.com', record: 'x'.repeat(700) },
    'Account x created',
  ),
  listaccts: listBodyPath ? readFileSync(listBodyPath) : envelope({ accounts: {} }, '0 account(s)'),
};

const server = createServer(
  {
    cert: readFileSync(certPath!),
    key: readFileSync(keyPath!),
    minVersion: 'TLSv1.2',
    keepAliveTimeout: 65_000,
  },
  (request, response) => {
    // Read the whole request, as Berth does, before answering.
    request.on('data', () => {});
    request.on('end', () => {
      const op = /\/api\/v1\/([\w-]+)\/?/.exec(request.url ?? '')?.[1] ?? '';
      const body = bodies[op] ?? bodies.test_connection!;
      response.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': body.length,
      });
      response.end(body);
    });
  },
);
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`ready ${typeof address === 'object' && address ? address.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
