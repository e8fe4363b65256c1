// BIND's reloads, each costing what changed and not what BIND has. Berth's zones are BIND's added
// zones (`allow-new-zones yes`): a new zone is given to BIND with `rndc addzone`, a zone gone is
// taken with `rndc delzone`, and BIND keeps them in its own database of added zones (its NZD file)
// across restarts. Neither reads any other zone nor BIND's configuration: `rndc reconfig`, which the
// zone list included from named.conf needed, reads every zone statement there is (about 30 ms a
// thousand zones, and growing with them). A zone rewritten (a subdomain's records, the DKIM key) is
// read alone with `rndc reload <zone>`. Each returns before the zone is loaded: a change is live
// once BIND answers the zone's SOA with the serial its file has (a DNS query, or `rndc zonestatus
// <zone>` where Berth is not told where BIND listens). The reload carries every change written
// before it began (coalesceReloads).
import { Resolver } from 'node:dns/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LinuxContext, Service } from '../context.ts';
import { MAX_POLL_MS } from '../wait.ts';
import { rndcControl } from './rndc.ts';

/** How long a zone may take to load after BIND was asked to read it. */
const LOAD_TIMEOUT_MS = 10_000;

export interface BindService extends Service {
  /**
   * A zone's file (`file`, as BIND reads it) was written with this serial, or removed (null);
   * `added` when the zone had no file before.
   */
  zoneWritten(zone: string, serial: number | null, file: string, added: boolean): void;
  /** A zone was to be written but its file already says it all: nothing for BIND to read. */
  zoneUnchanged(): void;
  /**
   * Brings BIND's added zones in line with `zones` (each zone's file, as BIND reads it): those
   * missing are added, and those whose file is in `dir` but no longer among them are taken away.
   * Zones of BIND's whose file is elsewhere are not Berth's and are left alone.
   */
  sync(zones: ReadonlyMap<string, string>, dir: string): Promise<void>;
  /** BIND's added zones and their files; null where BIND is not reached (below a test root). */
  listAdded(): Promise<Map<string, string> | null>;
  /** Runs an rndc command (its words); nothing where BIND is not reached. */
  rndc(...args: string[]): Promise<string>;
  /**
   * Whether BIND itself checks each zone added: addzone loads it before it answers, and refuses a
   * zone that does not load with the reason (`bad dotted quad`), keeping nothing of it.
   */
  readonly checksAddedZones: boolean;
}

/** The serial in a zone file's SOA record (as zone.db writes it), or null. */
export function zoneSerial(text: string | null): number | null {
  const found = text === null ? null : /^\s*(\d+) ; serial$/m.exec(text);
  return found ? Number(found[1]) : null;
}

/** The zone statement's body `rndc addzone` is given for a zone in `file`. */
export function zoneConfig(file: string): string {
  if (!file.startsWith('/') || /["\\\s;{}]/.test(file))
    throw new Error(`not a zone file BIND can be given: ${file}`);
  return `{ type primary; file "${file}"; };`;
}

/** Each zone and its file, from `zone "<name>" { … file "<file>"; … };` statements (named-nzd2nzf's). */
export function addedZones(statements: string): Map<string, string> {
  const zones = new Map<string, string>();
  for (const [, name, body] of statements.matchAll(/^zone "([^"]+)" (\{.*\});$/gm)) {
    const file = /\bfile "([^"]+)";/.exec(body!)?.[1];
    if (file) zones.set(name!, file);
  }
  return zones;
}

const NO_ZONE = /not found|no matching zone/;
const EXISTS = /already exists/;

export function bindService(ctx: LinuxContext): BindService {
  const { linux, runner } = ctx;
  let zones = new Map<string, { serial: number | null; file: string; added: boolean }>();
  /** Whether any change went through this service since the last reload began. */
  let written = false;
  // Berth speaks BIND's control channel itself (rndc.ts) where it is told where; the rndc program
  // otherwise.
  const control = linux.rndcControl === '' ? null : rndcControl(linux.rndcControl, linux.rndcKey);
  const reachable = control !== null || linux.rndc.length > 0;
  const rndc = async (...args: string[]) => {
    if (control) return { stdout: await control.command(args.join(' ')) };
    return runner.run([...linux.rndc, ...args]);
  };
  const failedWith = (error: unknown, pattern: RegExp) => pattern.test((error as Error).message);

  /** BIND asked over DNS, once for each question (it is on this machine). */
  const resolver = linux.bindListen === '' ? null : new Resolver({ timeout: 1_000, tries: 1 });
  resolver?.setServers([linux.bindListen]);

  /** The serial BIND serves the zone with; null when it has no such zone loaded. */
  async function loadedSerial(zone: string): Promise<number | null> {
    try {
      if (resolver) return (await resolver.resolveSoa(zone)).serial;
      const found = /^serial: (\d+)$/m.exec((await rndc('zonestatus', zone)).stdout);
      return found ? Number(found[1]) : null;
    } catch {
      return null;
    }
  }

  /** Gives BIND the zone, or has it read the zone again when it has it already. */
  async function read(zone: string, file: string, added: boolean): Promise<void> {
    const add = () => rndc('addzone', zone, zoneConfig(file));
    const reload = () => rndc('reload', zone);
    // A zone new to this server is added; one BIND has (removed and added back before BIND saw
    // either, or added by a change that failed after) is read again, and the other way round.
    const [first, then, unless] = added ? [add, reload, EXISTS] : [reload, add, NO_ZONE];
    try {
      await first();
    } catch (error) {
      if (!failedWith(error, unless)) throw error;
      await then();
    }
  }

  /** Returns once BIND serves the zone with `serial`, having asked it to read the zone. */
  async function serve(zone: string, serial: number, file: string, added: boolean): Promise<void> {
    const start = Date.now();
    await read(zone, file, added);
    for (let delay = 5; ; delay = Math.min(delay * 2, MAX_POLL_MS)) {
      if ((await loadedSerial(zone)) === serial) return;
      if (Date.now() - start > LOAD_TIMEOUT_MS)
        throw new Error(`BIND did not load the zone ${zone} (serial ${serial}): see its log`);
      await sleep(delay);
    }
  }

  async function listAdded(): Promise<Map<string, string> | null> {
    if (!ctx.live || !reachable || linux.bindAddedZones.length === 0) return null;
    // BIND's own list of the zones added to it, read as BIND's user: its directory is BIND's.
    return addedZones((await runner.run([...linux.bindAddedZones])).stdout);
  }

  /** Takes the zone from BIND; one it does not have is gone already. */
  async function drop(zone: string): Promise<void> {
    await rndc('delzone', zone).catch((error: unknown) => {
      if (!failedWith(error, NO_ZONE)) throw error;
    });
  }

  return {
    name: 'BIND',
    zoneWritten(zone, serial, file, added) {
      written = true;
      const earlier = zones.get(zone);
      // Added and then rewritten before BIND saw either: still new to BIND.
      zones.set(zone, { serial, file, added: added || (earlier?.added ?? false) });
    },
    zoneUnchanged() {
      written = true;
    },
    listAdded,
    checksAddedZones: ctx.live && reachable,
    async rndc(...args) {
      return ctx.live && reachable ? (await rndc(...args)).stdout : '';
    },
    async sync(expected, dir) {
      const listed = await listAdded();
      if (listed === null) return;
      const inDir = (file: string) => file.startsWith(`${dir}/`);
      for (const [zone, file] of expected)
        if (listed.get(zone) !== file) {
          if (listed.has(zone)) await drop(zone);
          await rndc('addzone', zone, zoneConfig(file)).catch((error: unknown) => {
            if (!failedWith(error, EXISTS)) throw error;
          });
        }
      for (const [zone, file] of listed) if (!expected.has(zone) && inDir(file)) await drop(zone);
    },
    async reload() {
      if (!reachable) return;
      // Nothing written through this service (recovery after a restart): every zone is read again.
      if (!written) {
        if (linux.reloadDns.length > 0) await runner.run(linux.reloadDns);
        return;
      }
      const taken = zones;
      written = false;
      zones = new Map();
      try {
        await Promise.all(
          [...taken].map(([zone, { serial, file, added }]) =>
            serial === null ? drop(zone) : serve(zone, serial, file, added),
          ),
        );
      } catch (error) {
        // What this reload did not make live is the next one's to read (newer writes stay).
        written = true;
        for (const [zone, change] of taken) if (!zones.has(zone)) zones.set(zone, change);
        throw error;
      }
    },
  };
}
