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

  it('sets every group of a user, through any run of edits and new users, as usermod -G would', () => {
    // Three groups, one named on two lines, with member lists of any shape; users edited and added.
    const member = fc.constantFrom('a', 'b', 'c', 'n0', 'n1', '');
    const list = fc.array(member, { maxLength: 4 }).map((names) => names.join(','));
    const groups = fc.subarray(['g1', 'g2', 'g3']);
    const step = fc.oneof(
      fc.record({ edit: fc.constantFrom('a', 'b', 'c'), groups }),
      fc.record({ add: fc.constant(true), groups }),
    );
    fc.assert(
      fc.property(
        fc.array(list, { minLength: 4, maxLength: 4 }),
        fc.array(step, { maxLength: 8 }),
        (lists, steps) => {
          const groupLines = ['g1', 'g2', 'g3', 'g1'].map((name, i) => [
            name,
            'x',
            String(2000 + i),
            lists[i]!,
          ]);
          const users = ['a', 'b', 'c'];
          const tables: Tables = {
            passwd: users.map((u, i) => [
              u,
              'x',
              String(1000 + i),
              String(1000 + i),
              '',
              `/home/${u}`,
              '/bin/sh',
            ]),
            shadow: users.map((u) => [u, '$6$x', '19000', '', '', '', '', '', '']),
            group: [...users.map((u, i) => [u, 'x', String(1000 + i), '']), ...groupLines.map((l) => [...l])],
            gshadow: [
              ...users.map((u) => [u, '!', '', '']),
              ...groupLines.map(([n, , , m]) => [n!, '!', '', m!]),
            ],
          };
          // The model: every line of group and gshadow looked at, as usermod -G does.
          const model = {
            group: tables.group.map((line) => [...line]),
            gshadow: tables.gshadow.map((line) => [...line]),
          };
          const edits = userTables(tables, DEFAULTS);
          let added = 0;
          for (const s of steps) {
            const user = 'edit' in s ? s.edit : `n${added++}`;
            if ('edit' in s) edits.edit({ user, locked: false, shell: '/bin/sh', groups: s.groups });
            else
              edits.add({
                user,
                uid: null,
                gecos: '',
                home: `/home/${user}`,
                shell: '/bin/sh',
                groups: s.groups,
                hash: '!',
              });
            if (!('edit' in s)) {
              const id = tables.group.at(-1)![2]!;
              model.group.push([user, 'x', id, '']);
              model.gshadow.push([user, '!', '', '']);
            }
            // A new user is put in its groups and taken out of none.
            for (const file of ['group', 'gshadow'] as const)
              for (const line of model[file])
                if (line[0]!.startsWith('g') && ('edit' in s || s.groups.includes(line[0]!)))
                  line[3] = expected(line[3]!, user, s.groups.includes(line[0]!));
            assert.deepEqual(tables.group, model.group);
            assert.deepEqual(tables.gshadow, model.gshadow);
          }
        },
      ),
      { numRuns: 1_000 },
    );
  });
});
