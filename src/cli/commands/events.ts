import { logCommand } from '../log-command.ts';

/** The delivery log: recent events and what became of each delivery. */
export const eventsCommand = logCommand({
  name: 'events',
  summary: 'recent events and what became of each delivery to hooks and webhooks',
  async list(services, limit) {
    const { db } = services.store;
    const events = await db
      .selectFrom('events')
      .selectAll()
      .orderBy('created_ms', 'desc')
      .limit(limit)
      .execute();
    const deliveries = events.length
      ? await db
          .selectFrom('deliveries')
          .selectAll()
          .where(
            'event_id',
            'in',
            events.map((e) => e.id),
          )
          .execute()
      : [];
    const rows = events.map((event) => ({
      id: event.id,
      type: event.type,
      at: new Date(Number(event.created_ms)).toISOString(),
      account: (JSON.parse(event.payload) as { account: string }).account,
      deliveries: deliveries
        .filter((d) => d.event_id === event.id)
        .map((d) => ({
          target: d.target,
          attempts: Number(d.attempts),
          delivered: d.delivered_ms === null ? null : new Date(Number(d.delivered_ms)).toISOString(),
          error: d.last_error,
        })),
    }));
    return {
      json: rows,
      header: ['TIME', 'EVENT', 'ACCOUNT', 'TARGET', 'ATTEMPTS', 'STATE'],
      rows: rows.flatMap((row) =>
        row.deliveries.map((d) => [
          row.at,
          row.type,
          row.account,
          d.target,
          String(d.attempts),
          d.delivered ? 'delivered' : (d.error ?? 'pending'),
        ]),
      ),
    };
  },
});
