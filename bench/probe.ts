// Another caller, in a process of its own so that the load generator's busy event loop cannot
// delay it: one call every INTERVAL ms over one keep-alive connection for DURATION ms, then the
// latencies as JSON on standard output.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';

const [port, path, headersJson, caPath, intervalMs, durationMs] = process.argv.slice(2);
const agent = new Agent({
  keepAlive: true,
  maxSockets: 1,
  ca: readFileSync(caPath!),
  servername: 'localhost',
});
const headers = JSON.parse(headersJson!) as Record<string, string>;

function call(): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: Number(port), path, method: 'POST', agent, headers },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode ?? 0 }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

await call(); // connect, and verify the credentials once, before measuring
const latencies: number[] = [];
let failures = 0;
const end = performance.now() + Number(durationMs);
while (performance.now() < end) {
  const next = performance.now() + Number(intervalMs);
  const { ms, status } = await call();
  latencies.push(ms);
  if (status !== 200) failures++;
  const wait = next - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}
process.stdout.write(`${JSON.stringify({ latencies, failures })}\n`);
agent.destroy();
