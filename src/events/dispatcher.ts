// Sends recorded events: to each executable in the hooks directory, with the event as JSON on
// standard input, and to each webhook as a signed JSON POST. Runs beside the server and never
// delays an API call; failures are retried with growing waits and kept in the delivery log.
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import type { Services } from '../services.ts';
import { hooksDir } from './events.ts';

const MAX_ATTEMPTS = 10;
const TIMEOUT_MS = 15_000;

/** Seconds before the next try after `attempts` failures: 1, 2, 4 … up to an hour. */
export function backoffMs(attempts: number): number {
  return Math.min(3600_000, 1000 * 2 ** (attempts - 1));
}

/** The signature header: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export function signature(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

function runHook(path: string, body: string, type: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      path,
      [],
      { timeout: TIMEOUT_MS, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', BERTH_EVENT: type } },
      (error, _out, stderr) => {
        if (error)
          reject(new Error(`${String(stderr).trim().split('\n').pop() || error.message}`.slice(0, 500)));
        else resolve();
      },
    );
    child.stdin?.on('error', () => {});
    child.stdin?.end(body);
  });
}

function post(url: string, secret: string, body: string, type: string, id: string): Promise<void> {
  const timestamp = Math.floor(Date.now() / 1000);
  const send = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Berth',
          'berth-event': type,
          'berth-delivery': id,
          'berth-signature': signature(secret, timestamp, body),
        },
        signal: AbortSignal.timeout(TIMEOUT_MS),
      },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve();
        else reject(new Error(`answered ${status}`));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export class Dispatcher {
  readonly #services: Services;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;

  constructor(services: Services) {
    this.#services = services;
  }

  start(intervalMs = 1000): void {
    this.#timer = setInterval(() => this.poke(), intervalMs);
    this.#timer.unref();
  }

  /** Looks for due deliveries now (after a call that recorded an event). */
  poke(): void {
    this.#running ??= this.#drain().finally(() => {
      this.#running = null;
    });
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#running;
  }

  async #drain(): Promise<void> {
    const { db } = this.#services.store;
    for (;;) {
      const now = Date.now();
      const due = await db
        .selectFrom('deliveries')
        .innerJoin('events', 'events.id', 'deliveries.event_id')
        .select([
          'deliveries.event_id',
          'deliveries.target',
          'deliveries.attempts',
          'deliveries.next_attempt_ms',
          'events.type',
          'events.payload',
        ])
        .where('deliveries.delivered_ms', 'is', null)
        .where('deliveries.next_attempt_ms', '<=', now)
        .orderBy('deliveries.next_attempt_ms')
        .limit(20)
        .execute();
      if (due.length === 0) return;
      await Promise.all(due.map((delivery) => this.#deliver(delivery, now)));
    }
  }

  async #deliver(
    delivery: {
      event_id: string;
      target: string;
      attempts: number;
      next_attempt_ms: number;
      type: string;
      payload: string;
    },
    now: number,
  ): Promise<void> {
    const { db } = this.#services.store;
    // Claim it: another server sharing the store may be looking at the same delivery.
    const claimed = await db
      .updateTable('deliveries')
      .set({ next_attempt_ms: now + TIMEOUT_MS * 2 })
      .where('event_id', '=', delivery.event_id)
      .where('target', '=', delivery.target)
      .where('next_attempt_ms', '=', Number(delivery.next_attempt_ms))
      .executeTakeFirst();
    if (claimed.numUpdatedRows === 0n) return;
    const attempts = Number(delivery.attempts) + 1;
    try {
      await this.#send(delivery.target, delivery.payload, delivery.type, delivery.event_id);
      await db
        .updateTable('deliveries')
        .set({ attempts, delivered_ms: Date.now(), last_error: null })
        .where('event_id', '=', delivery.event_id)
        .where('target', '=', delivery.target)
        .execute();
    } catch (error) {
      const message = (error as Error).message.slice(0, 500);
      const giveUp = attempts >= MAX_ATTEMPTS;
      await db
        .updateTable('deliveries')
        .set({
          attempts,
          last_error: giveUp ? `gave up: ${message}` : message,
          next_attempt_ms: giveUp ? Number.MAX_SAFE_INTEGER : Date.now() + backoffMs(attempts),
        })
        .where('event_id', '=', delivery.event_id)
        .where('target', '=', delivery.target)
        .execute();
      this.#services.log.warn(
        { target: delivery.target, event: delivery.event_id, attempts, error: message },
        'event delivery failed',
      );
    }
  }

  async #send(target: string, payload: string, type: string, id: string): Promise<void> {
    if (target.startsWith('hook:')) {
      await runHook(join(hooksDir(this.#services), target.slice(5)), payload, type);
      return;
    }
    const url = target.slice('webhook:'.length);
    const hook = this.#services.config.webhooks.find((candidate) => candidate.url === url);
    if (!hook) throw new Error('the webhook is no longer configured');
    await post(url, hook.secret, payload, type, id);
  }
}
