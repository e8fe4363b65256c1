// BIND's reloads, each costing what changed and not what BIND has: a zone added or removed (the zone
// list rewritten) is read with `rndc reconfig`, which loads the zones new to the list and drops the
// ones gone from it, reading no other zone's file; a zone rewritten (a subdomain's records, the
// DKIM key) is read alone with `rndc reload <zone>`. Either returns before the zone is loaded: a
// change is live once `rndc zonestatus <zone>` shows the serial its file has. The reload carries
// every change written before it began (coalesceReloads): the zones and the list are taken whole.
import { setTimeout as sleep } from 'node:timers/promises';
import type { LinuxContext, Service } from '../context.ts';

/** How long a zone may take to load after BIND was asked to read it. */
const LOAD_TIMEOUT_MS = 10_000;
/** How long a zone new to the list is left to reconfig before it is reloaded by name anyway. */
const RECONFIG_LOADS_MS = 500;

export interface BindService extends Service {
  /** The zone list was rewritten: `added` are the zones it names that it did not before. */
  listChanged(added: readonly string[]): void;
  /** A zone's file was written with this serial, or removed (null). */
  zoneWritten(zone: string, serial: number | null): void;
  /** A zone was to be written but its file already says it all: nothing for BIND to read. */
  zoneUnchanged(): void;
}

/** The serial in a zone file's SOA record (as zone.db writes it), or null. */
export function zoneSerial(text: string | null): number | null {
  const found = text === null ? null : /^\s*(\d+) ; serial$/m.exec(text);
  return found ? Number(found[1]) : null;
}

export function bindService(ctx: LinuxContext): BindService {
  const { linux, runner } = ctx;
  let list = false;
  let added = new Set<string>();
  let zones = new Map<string, number | null>();
  /** Whether any change went through this service since the last reload began. */
  let written = false;
  const rndc = (...args: string[]) => runner.run([...linux.rndc, ...args]);

  /** The serial BIND serves the zone with; null when it has no such zone loaded. */
  async function loadedSerial(zone: string): Promise<number | null> {
    try {
      const found = /^serial: (\d+)$/m.exec((await rndc('zonestatus', zone)).stdout);
      return found ? Number(found[1]) : null;
    } catch {
      return null;
    }
  }

  /** Returns once BIND serves the zone with `serial`, having asked it to read the zone if needed. */
  async function serve(zone: string, serial: number, isNew: boolean): Promise<void> {
    const start = Date.now();
    // A zone the list had before is read by name; one new to it is being loaded by reconfig,
    // unless the list had it all along (removed and added back before BIND saw either).
    let asked = !isNew;
    if (asked) await rndc('reload', zone);
    for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
      if ((await loadedSerial(zone)) === serial) return;
      if (!asked && Date.now() - start > RECONFIG_LOADS_MS) {
        asked = true;
        await rndc('reload', zone);
        continue;
      }
      if (Date.now() - start > LOAD_TIMEOUT_MS)
        throw new Error(`BIND did not load the zone ${zone} (serial ${serial}): see its log`);
      await sleep(delay);
    }
  }

  return {
    name: 'BIND',
    listChanged(names) {
      written = true;
      list = true;
      for (const name of names) added.add(name);
    },
    zoneWritten(zone, serial) {
      written = true;
      zones.set(zone, serial);
    },
    zoneUnchanged() {
      written = true;
    },
    async reload() {
      if (linux.rndc.length === 0) return;
      // Nothing written through this service (recovery after a restart): every zone is read again.
      if (!written) {
        if (linux.reloadDns.length > 0) await runner.run(linux.reloadDns);
        return;
      }
      const taken = { list, added, zones };
      written = false;
      list = false;
      added = new Set();
      zones = new Map();
      try {
        if (taken.list) await rndc('reconfig');
        // A zone removed went with reconfig (BIND answers REFUSED for it once it returns).
        await Promise.all(
          [...taken.zones].map(([zone, serial]) =>
            serial === null ? Promise.resolve() : serve(zone, serial, taken.added.has(zone)),
          ),
        );
      } catch (error) {
        // What this reload did not make live is the next one's to read (newer writes stay).
        written = true;
        list ||= taken.list;
        for (const name of taken.added) added.add(name);
        for (const [zone, serial] of taken.zones) if (!zones.has(zone)) zones.set(zone, serial);
        throw error;
      }
    },
  };
}
