// Berth's zones as BIND's added zones, against Debian's BIND itself (a named of the test's own, on
// ports of its own): a zone added, rewritten and removed through the control channel Berth speaks
// (rndc.ts), each served over DNS with its serial when the reload answers; a zone that does not load
// refused by addzone with the reason, leaving nothing; BIND's added zones read from its database and
// brought in line with the zone files.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LinuxConfig } from '../../src/config/index.ts';
import { coalesceReloads, type LinuxContext } from '../../src/provision/linux/context.ts';
import { type BindService, bindService } from '../../src/provision/linux/dns/bind.ts';
import { rndcControl } from '../../src/provision/linux/dns/rndc.ts';
import { execRunner } from '../../src/provision/linux/run.ts';
import { tempDir } from '../helpers.ts';

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

const zoneText = (zone: string, serial: number, address = '192.0.2.10') =>
  `$ORIGIN ${zone}.\n$TTL 300\n@ IN SOA ns1.${zone}. hostmaster.${zone}. (\n  ${serial} ; serial\n  3600 600 86400 300 )\n@ IN NS ns1.${zone}.\nns1 IN A 192.0.2.1\n@ IN A ${address}\n`;

describe('BIND’s added zones, with BIND itself', () => {
  const dir = tempDir('berth-bind-');
  const zones = join(dir, 'zones');
  let named: ChildProcess;
  let bind: BindService;
  let dnsPort: number;
  const file = (zone: string) => join(zones, `${zone}.db`);
  const soa = async (zone: string) => {
    const resolver = new Resolver({ timeout: 1000, tries: 1 });
    resolver.setServers([`127.0.0.1:${dnsPort}`]);
    return (await resolver.resolveSoa(zone)).serial;
  };
  /**
   * BIND's added zones, once they are `expected` or after 5 s: BIND drops a zone from its database
   * of added zones a moment after delzone answers (the zone is unserved already).
   */
  const addedSettled = async (expected: string[]) => {
    let names: string[] = [];
    for (let i = 0; i < 100; i++) {
      names = [...((await bind.listAdded()) ?? new Map()).keys()].sort();
      if (names.join() === expected.join()) break;
      await sleep(50);
    }
    return names;
  };
  /** What the dns component does: the file, then the mark; answers once the reload carrying it has. */
  const write = async (zone: string, text: string | null, added: boolean) => {
    const { carriedBy } = await bind.writing!(async () => {
      if (text === null) rmSync(file(zone), { force: true });
      else writeFileSync(file(zone), text);
      bind.zoneWritten(
        zone,
        text === null ? null : Number(/(\d+) ; serial/.exec(text)![1]),
        file(zone),
        added,
      );
    });
    await bind.reloadCarrying!(carriedBy);
  };

  before(async () => {
    execFileSync('/usr/bin/mkdir', ['-p', zones]);
    execFileSync('/usr/sbin/rndc-confgen', ['-a', '-c', join(dir, 'rndc.key')], { stdio: 'ignore' });
    dnsPort = await freePort();
    const controlPort = await freePort();
    writeFileSync(
      join(dir, 'named.conf'),
      `options { directory "${dir}"; listen-on port ${dnsPort} { 127.0.0.1; }; listen-on-v6 { none; }; recursion no; allow-new-zones yes; pid-file "${dir}/named.pid"; dnssec-validation no; };\ninclude "${dir}/rndc.key";\ncontrols { inet 127.0.0.1 port ${controlPort} allow { 127.0.0.1; } keys { "rndc-key"; }; };\n`,
    );
    named = spawn('/usr/sbin/named', ['-g', '-n', '1', '-c', join(dir, 'named.conf')], { stdio: 'ignore' });
    const control = rndcControl(`127.0.0.1:${controlPort}`, join(dir, 'rndc.key'));
    for (let i = 0; ; i++) {
      try {
        await control.command('status');
        break;
      } catch (error) {
        if (i > 100) throw error;
        await sleep(50);
      }
    }
    const linux = {
      rndc: [],
      rndcControl: `127.0.0.1:${controlPort}`,
      rndcKey: join(dir, 'rndc.key'),
      bindListen: `127.0.0.1:${dnsPort}`,
      bindAddedZones: ['/usr/bin/named-nzd2nzf', join(dir, '_default.nzd')],
      reloadDns: [],
    } as unknown as LinuxConfig;
    bind = bindService({ linux, runner: execRunner(), live: true } as unknown as LinuxContext);
    coalesceReloads(bind);
  });
  after(() => {
    named?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds a zone, serves it with its serial once the change answers, reads it again when rewritten, and takes it away', async () => {
    await write('a.example', zoneText('a.example', 2026010101), true);
    assert.equal(await soa('a.example'), 2026010101);
    assert.equal((await bind.listAdded())?.get('a.example'), file('a.example'));
    await write('a.example', zoneText('a.example', 2026010102, '192.0.2.11'), false);
    assert.equal(await soa('a.example'), 2026010102);
    await write('a.example', null, false);
    // No longer served once the change answers; BIND drops it from its database of added zones
    // a moment later (delzone answers first).
    await assert.rejects(soa('a.example'));
    assert.deepEqual(await addedSettled([]), []);
  });

  it('has addzone refuse a zone that does not load, with the reason, and keep nothing of it', async () => {
    await assert.rejects(
      write('broken.example', zoneText('broken.example', 2026010101, '999.0.2.1'), true),
      /bad dotted quad/,
    );
    assert.equal((await bind.listAdded())?.has('broken.example'), false);
    await assert.rejects(soa('broken.example'));
    // The call's undo: the file goes, and BIND has nothing of it to take away.
    await write('broken.example', null, false);
  });

  it('brings BIND’s added zones in line with the zone files, leaving a zone whose file is elsewhere', async () => {
    await write('kept.example', zoneText('kept.example', 2026010101), true);
    await write('gone.example', zoneText('gone.example', 2026010101), true);
    rmSync(file('gone.example'));
    writeFileSync(file('new.example'), zoneText('new.example', 2026010101));
    writeFileSync(join(dir, 'theirs.db'), zoneText('theirs.example', 2026010101));
    await bind.rndc('addzone', 'theirs.example', `{ type primary; file "${join(dir, 'theirs.db')}"; };`);
    await bind.sync(new Map(['kept.example', 'new.example'].map((zone) => [zone, file(zone)])), zones);
    assert.equal(await soa('new.example'), 2026010101);
    await assert.rejects(soa('gone.example'));
    assert.deepEqual(await addedSettled(['kept.example', 'new.example', 'theirs.example']), [
      'kept.example',
      'new.example',
      'theirs.example',
    ]);
  });
});
