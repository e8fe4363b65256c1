// Counters and histograms for Prometheus, kept in memory and written in its text format at
// /metrics (admin listener, behind API or portal credentials; metrics.ts serves it).
import { backupStatuses } from '../store/backup-jobs.ts';
import type { Db } from '../store/schema.ts';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

function labels(values: Record<string, string>): string {
  const parts = Object.entries(values).map(
    ([key, value]) => `${key}="${value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`))}"`,
  );
  return parts.length > 0 ? `{${parts.join(',')}}` : '';
}

/** One operation's calls: how many answered with each status, and how long they took. */
interface OperationCalls {
  statuses: Map<number, number>;
  /** Calls answered within each of BUCKETS (cumulative, as Prometheus counts them). */
  buckets: number[];
  sum: number;
  count: number;
}

export class Metrics {
  readonly #calls = new Map<string, OperationCalls>();
  readonly #stepFailures = new Map<string, number>();
  #authFailures = 0;
  #lockouts = 0;
  #backupFailures = 0;

  /** Counts an API call; it runs on every call, so it only adds. */
  request(operation: string, status: number, seconds: number): void {
    let calls = this.#calls.get(operation);
    if (!calls) {
      calls = { statuses: new Map(), buckets: BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.#calls.set(operation, calls);
    }
    calls.statuses.set(status, (calls.statuses.get(status) ?? 0) + 1);
    for (let i = BUCKETS.length - 1; i >= 0 && seconds <= BUCKETS[i]!; i--) calls.buckets[i]!++;
    calls.sum += seconds;
    calls.count++;
  }

  authFailure(): void {
    this.#authFailures++;
  }

  lockout(): void {
    this.#lockouts++;
  }

  /** A backup attempt that failed (it is tried again, with backoff, until its last attempt). */
  backupFailure(): void {
    this.#backupFailures++;
  }

  stepFailure(step: string): void {
    this.#stepFailures.set(step, (this.#stepFailures.get(step) ?? 0) + 1);
  }

  /** The Prometheus text exposition, with the accounts counted in the store now. */
  /** `check`: the repository's last restic check (null: none yet; undefined: no backups here). */
  async render(
    db: Db,
    reloads: ReadonlyMap<string, number> = new Map(),
    check?: { time: Date; ok: boolean } | null,
  ): Promise<string> {
    const out: string[] = [];
    const family = (name: string, type: string, help: string) =>
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);

    family('berth_requests_total', 'counter', 'API calls answered, by operation and HTTP status.');
    const calls = [...this.#calls].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [operation, { statuses }] of calls) {
      for (const [status, value] of [...statuses].sort(([a], [b]) => a - b)) {
        out.push(`berth_requests_total${labels({ operation, status: String(status) })} ${value}`);
      }
    }
    family('berth_request_duration_seconds', 'histogram', 'Time to answer an API call, by operation.');
    for (const [operation, histogram] of calls) {
      BUCKETS.forEach((bound, i) => {
        out.push(
          `berth_request_duration_seconds_bucket${labels({ operation, le: String(bound) })} ${histogram.buckets[i]}`,
        );
      });
      out.push(
        `berth_request_duration_seconds_bucket${labels({ operation, le: '+Inf' })} ${histogram.count}`,
      );
      out.push(`berth_request_duration_seconds_sum${labels({ operation })} ${histogram.sum}`);
      out.push(`berth_request_duration_seconds_count${labels({ operation })} ${histogram.count}`);
    }
    family('berth_auth_failures_total', 'counter', 'Failed authentications (API and portal).');
    out.push(`berth_auth_failures_total ${this.#authFailures}`);
    family('berth_lockouts_total', 'counter', 'Source addresses locked out after repeated failures.');
    out.push(`berth_lockouts_total ${this.#lockouts}`);
    family('berth_driver_step_failures_total', 'counter', 'Provisioning steps that failed, by step.');
    for (const [step, value] of [...this.#stepFailures].sort()) {
      out.push(`berth_driver_step_failures_total${labels({ step })} ${value}`);
    }

    const count = async (where?: (q: ReturnType<typeof base>) => ReturnType<typeof base>) => {
      const query = where ? where(base()) : base();
      return Number((await query.executeTakeFirstOrThrow()).n);
    };
    const base = () => db.selectFrom('accounts').select((eb) => eb.fn.countAll<number | string>().as('n'));
    const [all, suspended, resellers] = [
      await count(),
      await count((q) => q.where('suspended', '=', 1)),
      await count((q) => q.where('reseller', '=', 1)),
    ];
    if (reloads.size > 0) {
      family('berth_service_reloads_total', 'counter', 'Reloads of the system services, by service.');
      for (const [service, value] of [...reloads].sort())
        out.push(`berth_service_reloads_total${labels({ service })} ${value}`);
    }
    family('berth_backup_failures_total', 'counter', 'Backup attempts that failed on this server.');
    out.push(`berth_backup_failures_total ${this.#backupFailures}`);
    family(
      'berth_backup_last_success_seconds',
      'gauge',
      "When each account's last good backup finished, in Unix seconds.",
    );
    for (const [user, status] of [...(await backupStatuses(db))].sort(([a], [b]) => (a < b ? -1 : 1)))
      if (status.lastSuccess)
        out.push(
          `berth_backup_last_success_seconds${labels({ user })} ${Math.floor(status.lastSuccess.getTime() / 1000)}`,
        );
    if (check !== undefined) {
      family('berth_backup_check_ok', 'gauge', "1 when the backup repository's last restic check passed.");
      out.push(`berth_backup_check_ok ${check?.ok ? 1 : 0}`);
      if (check) {
        family(
          'berth_backup_last_check_seconds',
          'gauge',
          "When the repository's last check ended, in Unix seconds.",
        );
        out.push(`berth_backup_last_check_seconds ${Math.floor(check.time.getTime() / 1000)}`);
      }
    }
    family('berth_accounts', 'gauge', 'Hosting accounts in the store, by state.');
    out.push(`berth_accounts${labels({ state: 'active' })} ${all - suspended}`);
    out.push(`berth_accounts${labels({ state: 'suspended' })} ${suspended}`);
    family('berth_resellers', 'gauge', 'Reseller accounts in the store.');
    out.push(`berth_resellers ${resellers}`);
    return `${out.join('\n')}\n`;
  }
}
