// Events: what happened to an account, recorded in the same transaction as the change (an outbox),
// with one delivery per target, so that no event is lost in a crash and none is sent for a change
// that was rolled back. The dispatcher sends them after the call has answered.
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Operation, RawParams } from '../operations/operation.ts';
import {
  actorName,
  auditedPrincipal,
  holderAccountOf,
  type Principal,
  type PrincipalKind,
  resellerOf,
} from '../operations/principal.ts';
import type { Services } from '../services.ts';
import type { Db } from '../store/schema.ts';

export interface Event {
  id: string;
  type: string;
  time: string;
  account: string;
  reseller: string | null;
  api_user: string;
  /** Who acted: `admin`, `reseller` or `holder` (an account's holder, `api_user` `customer:<user>`). */
  principal: PrincipalKind;
  /** The account holder an administrator or reseller acted for, when one did. */
  acting_for?: string;
  /** The call's parameters, passwords left out. */
  data: Record<string, string>;
}

export function hooksDir(services: Services): string {
  return join(services.config.dataDir, 'hooks');
}

/** Executable files directly in the hooks directory, by name. */
export function eventHooks(services: Services): string[] {
  const dir = hooksDir(services);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => !name.startsWith('.'))
    .filter((name) => {
      const stat = statSync(join(dir, name));
      return stat.isFile() && (stat.mode & 0o111) !== 0;
    })
    .sort();
}

/** Records the call's event (Operation.event) and its deliveries inside the call's own transaction. */
export async function recordEvent(
  db: Db,
  services: Services,
  operation: Operation,
  principal: Principal,
  params: RawParams,
): Promise<void> {
  const type = operation.event;
  if (!type) return;
  const data: Record<string, string> = {};
  // Every parameter but passwords (password, current_password, …: whatever the schema marks so).
  for (const [name, spec] of Object.entries(operation.params)) {
    const value = params.get(name)?.[0];
    if (typeof value === 'string' && value !== '' && spec.kind.schema.format !== 'password')
      data[name] = value;
  }
  const now = Date.now();
  const actingFor = auditedPrincipal(principal).acting_for;
  const event: Event = {
    id: randomUUID(),
    type,
    time: new Date(now).toISOString(),
    account: holderAccountOf(principal)?.user ?? data.user ?? '',
    reseller: resellerOf(principal)?.user ?? null,
    api_user: actorName(principal),
    principal: principal.kind,
    ...(actingFor !== null && { acting_for: actingFor }),
    data,
  };
  const targets = [
    ...eventHooks(services).map((name) => `hook:${name}`),
    ...services.config.webhooks
      .filter((hook) => hook.events.length === 0 || hook.events.includes(type))
      .map((hook) => `webhook:${hook.url}`),
  ];
  if (targets.length === 0) return;
  await db
    .insertInto('events')
    .values({ id: event.id, type, payload: JSON.stringify(event), created_ms: now })
    .execute();
  await db
    .insertInto('deliveries')
    .values(
      targets.map((target) => ({
        event_id: event.id,
        target,
        next_attempt_ms: now,
        delivered_ms: null,
        last_error: null,
      })),
    )
    .execute();
}
