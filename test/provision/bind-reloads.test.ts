// BIND reads only what a change touched: a zone added or removed by `rndc reconfig`, a zone
// rewritten by `rndc reload <zone>`; a reload answers once BIND serves each zone's new serial, and
// carries every change written before it began.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LinuxConfig } from '../../src/config/index.ts';
import { coalesceReloads, type LinuxContext } from '../../src/provision/linux/context.ts';
import { bindService, zoneSerial } from '../../src/provision/linux/dns/bind.ts';
import { CommandFailed, type CommandRunner } from '../../src/provision/linux/run.ts';

/**
 * A BIND behind rndc: `files` are the zones' serials on disk, `listed` the zone list; it loads a
 * zone `lag` status questions after it was asked to, as named loads zones after rndc returns.
 */
function fakeBind(lag = 0) {
  const files = new Map<string, number>();
  const listed = new Set<string>();
  const configured = new Set<string>();
  const loaded = new Map<string, number>();
  const loading = new Map<string, { serial: number; after: number }>();
  const commands: string[] = [];
  let failReconfig = false;
  const load = (zone: string) => loading.set(zone, { serial: files.get(zone)!, after: lag });
  const runner: CommandRunner = {
    async run(argv) {
      const args = argv.slice(1);
      commands.push(args.join(' '));
      const [command, zone] = args;
      if (command === 'reconfig') {
        if (failReconfig) throw new CommandFailed('rndc failed: connection refused');
        for (const name of listed) if (!configured.has(name)) load(name);
        for (const name of configured) if (!listed.has(name)) loaded.delete(name);
        configured.clear();
        for (const name of listed) configured.add(name);
      } else if (command === 'reload' && zone) {
        if (!configured.has(zone)) throw new CommandFailed(`rndc failed: no matching zone '${zone}'`);
        load(zone);
      } else if (command === 'zonestatus' && zone) {
        const pending = loading.get(zone);
        if (pending && pending.after-- <= 0) {
          loaded.set(zone, pending.serial);
          loading.delete(zone);
        }
        if (!loaded.has(zone)) throw new CommandFailed(`rndc failed: no matching zone '${zone}'`);
        return { stdout: `name: ${zone}\ntype: primary\nserial: ${loaded.get(zone)}\n`, stderr: '' };
      }
      return { stdout: '', stderr: '' };
    },
  };
  const linux = { rndc: ['/usr/sbin/rndc'], reloadDns: ['/usr/sbin/rndc', 'reload'] } as LinuxConfig;
  const service = bindService({ linux, runner } as LinuxContext);
  coalesceReloads(service);
  /** What the dns component does for a zone written: its file, the list, then the marks. */
  const write = (zone: string, serial: number | null) =>
    service.writing!(async () => {
      const had = new Set(listed);
      if (serial === null) {
        files.delete(zone);
        listed.delete(zone);
      } else {
        files.set(zone, serial);
        listed.add(zone);
      }
      if (had.size !== listed.size) service.listChanged([...listed].filter((name) => !had.has(name)));
      service.zoneWritten(zone, serial);
    });
  return {
    service,
    commands,
    loaded,
    write,
    failReconfig: (fail: boolean) => {
      failReconfig = fail;
    },
    /** The reload that reads what `write` answered it is carried by. */
    carry: async (written: Promise<{ carriedBy: number }>) =>
      service.reloadCarrying!((await written).carriedBy),
  };
}

describe('BIND reloads', () => {
  it('read a new zone with reconfig and wait until it is served, reading no other zone', async () => {
    const bind = fakeBind(2);
    await bind.carry(bind.write('a.example', 2026010101));
    bind.commands.length = 0;
    await bind.carry(bind.write('b.example', 2026010101));
    assert.equal(bind.loaded.get('b.example'), 2026010101);
    assert.equal(bind.commands[0], 'reconfig');
    assert.ok(bind.commands.slice(1).every((c) => c === 'zonestatus b.example'));
    assert.ok(bind.commands.length >= 3, 'the reload waited while the zone loaded');
  });

  it('read a rewritten zone by name alone, and answer once its new serial is served', async () => {
    const bind = fakeBind(1);
    await bind.carry(bind.write('a.example', 2026010101));
    bind.commands.length = 0;
    await bind.carry(bind.write('a.example', 2026010102));
    assert.equal(bind.loaded.get('a.example'), 2026010102);
    assert.deepEqual(bind.commands, ['reload a.example', 'zonestatus a.example', 'zonestatus a.example']);
  });

  it('drop a removed zone with reconfig alone', async () => {
    const bind = fakeBind();
    await bind.carry(bind.write('a.example', 2026010101));
    bind.commands.length = 0;
    await bind.carry(bind.write('a.example', null));
    assert.deepEqual(bind.commands, ['reconfig']);
    assert.equal(bind.loaded.has('a.example'), false);
  });

  it('carry a burst of changes written during a reload with one more, every zone of it read', async () => {
    const bind = fakeBind(1);
    await bind.carry(bind.write('a.example', 2026010101));
    await bind.carry(bind.write('b.example', 2026010101));
    bind.commands.length = 0;
    const first = bind.carry(bind.write('c.example', 2026010101));
    await new Promise((resolve) => setImmediate(resolve));
    // Written while the first reload runs: the next reload reads them all, once.
    const burst = [
      bind.carry(bind.write('a.example', 2026010102)),
      bind.carry(bind.write('b.example', 2026010102)),
      bind.carry(bind.write('d.example', 2026010101)),
    ];
    await Promise.all([first, ...burst]);
    assert.deepEqual([...bind.loaded].sort(), [
      ['a.example', 2026010102],
      ['b.example', 2026010102],
      ['c.example', 2026010101],
      ['d.example', 2026010101],
    ]);
    assert.equal(bind.commands.filter((c) => c === 'reconfig').length, 2);
    assert.deepEqual(
      bind.commands.filter((c) => c.startsWith('reload')),
      ['reload a.example', 'reload b.example'],
    );
  });

  it('keep what a failed reload did not read for the next one', async () => {
    const bind = fakeBind();
    bind.failReconfig(true);
    await assert.rejects(bind.carry(bind.write('a.example', 2026010101)), /connection refused/);
    assert.equal(bind.loaded.has('a.example'), false);
    bind.failReconfig(false);
    await bind.service.reload();
    assert.equal(bind.loaded.get('a.example'), 2026010101);
  });

  it('read nothing when a zone was written as it was', async () => {
    const bind = fakeBind();
    await bind.carry(bind.service.writing!(async () => bind.service.zoneUnchanged()));
    assert.deepEqual(bind.commands, []);
  });

  it('read every zone again when nothing was written (recovery)', async () => {
    const bind = fakeBind();
    bind.commands.length = 0;
    await bind.service.reload();
    assert.deepEqual(bind.commands, ['reload']);
  });

  it('find the serial in a zone file as the zone template writes it', () => {
    assert.equal(
      zoneSerial('@ IN SOA ns1.example. h.example. (\n                2026112603 ; serial\n'),
      2026112603,
    );
    assert.equal(zoneSerial(null), null);
  });
});
