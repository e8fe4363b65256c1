// The edits of the user database's lines (user/database-edits.ts): a user put in or out of a
// group's member list as usermod -G does it, whatever the list holds, and the lines an edit
// changed noted for its writer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type Tables, userTables } from '../../src/provision/linux/user/database-edits.ts';

const DEFAULTS = { uidMin: 1000, uidMax: 60000, passwordAges: ['', '', ''] as [string, string, string] };

/** What usermod -G makes of a member list: empty names dropped, a member kept in its place. */
function expected(list: string, user: string, wanted: boolean): string {
  const members = list.split(',').filter((name) => name !== '');
  if (members.includes(user) === wanted) return list;
  return (wanted ? [...members, user] : members.filter((name) => name !== user)).join(',');
}

function tablesWith(members: string): Tables {
  return {
    passwd: [['ux', 'x', '1000', '1000', '', '/home/ux', '/bin/sh']],
    shadow: [['ux', '$6$x', '19000', '', '', '', '', '', '']],
    group: [
      ['ux', 'x', '1000', ''],
      ['g', 'x', '2000', members],
    ],
    gshadow: [
      ['ux', '!', '', ''],
      ['g', '!', '', members],
    ],
  };
}

describe('the user database’s edits', () => {
  it('puts a user in or out of a member list as usermod -G does, whatever the list holds', () => {
    // Names that are each other's prefixes and suffixes, repeated, and empty.
    const name = fc.constantFrom('ux', 'u', 'x', 'uxx', 'aux', 'b', '');
    fc.assert(
      fc.property(fc.array(name, { maxLength: 8 }), fc.boolean(), (names, wanted) => {
        const list = names.join(',');
        const tables = tablesWith(list);
        const edits = userTables(tables, DEFAULTS);
        edits.edit({ user: 'ux', locked: false, shell: '/bin/sh', groups: wanted ? ['g'] : [] });
        const want = expected(list, 'ux', wanted);
        assert.equal(tables.group[1]![3], want, `${JSON.stringify(list)} ${wanted}`);
        assert.equal(tables.gshadow[1]![3], want);
        // A line is noted as changed exactly when it changed.
        assert.equal(edits.touched.group.has(tables.group[1]!), want !== list);
      }),
      { numRuns: 2_000 },
    );
  });

  it('notes the lines of a suspension, and none of an edit that changes nothing', () => {
    const tables = tablesWith('b,ux');
    const edits = userTables(tables, DEFAULTS);
    edits.edit({ user: 'ux', locked: true, shell: '/usr/sbin/nologin', groups: [] });
    assert.deepEqual(
      [
        edits.touched.passwd.size,
        edits.touched.shadow.size,
        edits.touched.group.size,
        edits.touched.gshadow.size,
      ],
      [1, 1, 1, 1],
    );
    assert.equal(tables.shadow[0]![1], '!$6$x');
    for (const file of ['passwd', 'shadow', 'group', 'gshadow'] as const) edits.touched[file].clear();
    edits.edit({ user: 'ux', locked: true, shell: '/usr/sbin/nologin', groups: [] });
    assert.equal(
      ['passwd', 'shadow', 'group', 'gshadow'].every((file) => edits.touched[file as 'passwd'].size === 0),
      true,
    );
  });
});
