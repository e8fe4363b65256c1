// BIND reads only what a change touched: a zone added with `rndc addzone`, removed with `rndc
// delzone`, rewritten with `rndc reload <zone>`; a reload answers once BIND serves each zone's new
// serial, and carries every change written before it began. At start, BIND's added zones are
// brought in line with the zone files.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LinuxConfig } from '../../src/config/index.ts';
import { coalesceReloads, type LinuxContext } from '../../src/provision/linux/context.ts';
import { addedZones, bindService, zoneConfig, zoneSerial } from '../../src/provision/linux/dns/bind.ts';
import { CommandFailed, type CommandRunner } from '../../src/provision/linux/run.ts';
import { dnsServer, type Records } from '../dns-server.ts';
import { streamsNothing } from '../helpers.ts';

const DIR = '/etc/bind/zones';
const fileOf = (zone: string) => `${DIR}/${zone}.db`;

/**
 * A BIND behind rndc: `files` are the zones' serials on disk, `added` its added zones and their
 * files (its NZD); it loads a zone `lag` status questions after it was asked to, as named loads
 * zones after rndc returns.
 */
function fakeBind(lag = 0, bindListen = '') {
  const files = new Map<string, number>();
  const added = new Map<string, string>();
  const loaded = new Map<string, number>();
  const loading = new Map<string, { serial: number; after: number }>();
  const commands: string[] = [];
  let failing: string | null = null;
  const load = (zone: string) => loading.set(zone, { serial: files.get(zone)!, after: lag });
  const runner: CommandRunner = {
    async run(argv) {
      if (argv[0] === '/usr/bin/named-nzd2nzf') {
        commands.push('list');
        const lines = [...added].map(([zone, file]) => `zone "${zone}" ${zoneConfig(file)}`);
        return { stdout: lines.map((line) => `${line}\n`).join(''), stderr: '' };
      }
      const args = argv.slice(1);
      const [command, zone, config] = args;
      commands.push(args.slice(0, 2).join(' '));
      if (command === failing) throw new CommandFailed(`rndc: '${command}' failed: connection refused`);
      if (command === 'addzone' && zone) {
        if (added.has(zone)) throw new CommandFailed(`rndc: 'addzone' failed: already exists`);
        added.set(zone, /file "([^"]+)"/.exec(config!)![1]!);
        load(zone);
      } else if (command === 'delzone' && zone) {
        if (!added.delete(zone))
          throw new CommandFailed(
            `rndc: 'delzone' failed: not found\nno matching zone '${zone}' in any view`,
          );
        loaded.delete(zone);
      } else if (command === 'reload' && zone) {
        if (!added.has(zone))
          throw new CommandFailed(`rndc: 'reload' failed: not found\nno matching zone '${zone}' in any view`);
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
    stream: streamsNothing,
  };
  const linux = {
    rndc: ['/usr/sbin/rndc'],
    // The rndc program here (a fake); rndc-control.test.ts speaks the control channel.
    rndcControl: '',
    reloadDns: ['/usr/sbin/rndc', 'reload'],
    bindListen,
    bindAddedZones: ['/usr/bin/named-nzd2nzf', '/var/cache/bind/_default.nzd'],
  } as LinuxConfig;
  const service = bindService({ linux, runner, live: true } as LinuxContext);
  coalesceReloads(service);
  /** What the dns component does for a zone written: its file, then the mark. */
  const write = (zone: string, serial: number | null) =>
    service.writing!(async () => {
      const isNew = !files.has(zone);
      if (serial === null) files.delete(zone);
      else files.set(zone, serial);
      service.zoneWritten(zone, serial, fileOf(zone), isNew);
    });
  return {
    service,
    commands,
    loaded,
    added,
    files,
    write,
    fail: (command: string | null) => {
      failing = command;
    },
    /** The reload that reads what `write` answered it is carried by. */
    carry: async (written: Promise<{ carriedBy: number }>) =>
      service.reloadCarrying!((await written).carriedBy),
  };
}

describe('BIND reloads', () => {
  it('add a new zone alone and wait until it is served', async () => {
    const bind = fakeBind(2);
    await bind.carry(bind.write('a.example', 2026010101));
    bind.commands.length = 0;
    await bind.carry(bind.write('b.example', 2026010101));
    assert.equal(bind.loaded.get('b.example'), 2026010101);
    assert.equal(bind.added.get('b.example'), fileOf('b.example'));
    assert.equal(bind.commands[0], 'addzone b.example');
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

  it('ask BIND over DNS for the serial it serves a zone with, starting no process for it', async () => {
    const served = new Map<string, Records>();
    const dns = await dnsServer(served);
    try {
      const bind = fakeBind(0, dns.address);
      served.set('a.example', { soa: 2026010101 });
      await bind.carry(bind.write('a.example', 2026010101));
      bind.commands.length = 0;
      const rewritten = bind.carry(bind.write('a.example', 2026010102));
      // Answered with the old serial until BIND has loaded the new one.
      await new Promise((resolve) => setTimeout(resolve, 50));
      served.set('a.example', { soa: 2026010102 });
      await rewritten;
      assert.deepEqual(bind.commands, ['reload a.example']);
    } finally {
      dns.close();
    }
  });

  it('take a removed zone with delzone alone', async () => {
    const bind = fakeBind();
    await bind.carry(bind.write('a.example', 2026010101));
    bind.commands.length = 0;
    await bind.carry(bind.write('a.example', null));
    assert.deepEqual(bind.commands, ['delzone a.example']);
    assert.equal(bind.loaded.has('a.example'), false);
    assert.equal(bind.added.has('a.example'), false);
  });

  it('read again a zone BIND has already when it is added, and add one it lacks when it is rewritten', async () => {
    const bind = fakeBind();
    // Removed and added back before BIND saw either: BIND still has it.
    await bind.carry(bind.write('a.example', 2026010101));
    bind.added.set('b.example', fileOf('b.example'));
    bind.commands.length = 0;
    await bind.carry(bind.write('b.example', 2026010101));
    assert.deepEqual(bind.commands.slice(0, 2), ['addzone b.example', 'reload b.example']);
    assert.equal(bind.loaded.get('b.example'), 2026010101);
    // A zone whose file was there but that BIND lost.
    bind.added.delete('a.example');
    bind.commands.length = 0;
    await bind.carry(bind.write('a.example', 2026010102));
    assert.deepEqual(bind.commands.slice(0, 2), ['reload a.example', 'addzone a.example']);
    assert.equal(bind.loaded.get('a.example'), 2026010102);
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
    assert.deepEqual(
      bind.commands.filter((c) => !c.startsWith('zonestatus')),
      ['addzone c.example', 'reload a.example', 'reload b.example', 'addzone d.example'],
    );
  });

  it('keep what a failed reload did not read for the next one', async () => {
    const bind = fakeBind();
    bind.fail('addzone');
    await assert.rejects(bind.carry(bind.write('a.example', 2026010101)), /connection refused/);
    assert.equal(bind.loaded.has('a.example'), false);
    bind.fail(null);
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

  it('bring BIND’s added zones in line with the zone files at start, leaving zones not Berth’s', async () => {
    const bind = fakeBind();
    bind.added.set('gone.example', fileOf('gone.example'));
    bind.added.set('kept.example', fileOf('kept.example'));
    bind.added.set('moved.example', '/srv/old-zones/moved.example.db');
    bind.added.set('theirs.example', '/srv/other/theirs.example.db');
    const files = new Map(
      ['kept.example', 'new.example', 'moved.example'].map((zone) => [zone, fileOf(zone)]),
    );
    await bind.service.sync(files, DIR);
    assert.deepEqual(
      [...bind.added].sort(),
      [...files, ['theirs.example', '/srv/other/theirs.example.db']].sort(),
    );
    assert.deepEqual(bind.commands.filter((c) => c !== 'list').sort(), [
      'addzone moved.example',
      'addzone new.example',
      'delzone gone.example',
      'delzone moved.example',
    ]);
  });

  it('give BIND only a zone file it reads as one path', () => {
    assert.equal(
      zoneConfig('/etc/bind/zones/a.example.db'),
      '{ type primary; file "/etc/bind/zones/a.example.db"; };',
    );
    for (const file of ['zones/a.db', '/etc/bind/a"; };zone "x.db', '/etc/bind/a b.db', '/etc/bind/a\\b.db'])
      assert.throws(() => zoneConfig(file), /not a zone file/);
    assert.deepEqual(
      addedZones(
        'zone "a.example" { type primary; file "/z/a.db"; };\nzone "b.example" { type primary; };\n',
      ),
      new Map([['a.example', '/z/a.db']]),
    );
  });

  it('find the serial in a zone file as the zone template writes it', () => {
    assert.equal(
      zoneSerial('@ IN SOA ns1.example. h.example. (\n                2026112603 ; serial\n'),
      2026112603,
    );
    assert.equal(zoneSerial(null), null);
  });
});
