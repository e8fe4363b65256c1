// The client as integrators install it: packed from client/, installed into a project of its own
// without the network, it brings no dependency and no Node binary, and its types hold under tsc.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { tempDir } from './helpers.ts';

const run = promisify(execFile);
const ROOT = new URL('..', import.meta.url).pathname;

describe('the berth-client package', () => {
  const project = tempDir('berth-client-project-');
  after(() => rmSync(project, { recursive: true, force: true }));

  it('installs from its packed tarball alone, small and with no dependency', async () => {
    const { stdout } = await run('npm', [
      'pack',
      '--json',
      '--pack-destination',
      project,
      join(ROOT, 'client'),
    ]);
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    assert.deepEqual(packed!.files.map((file) => file.path).sort(), [
      'README.md',
      'index.d.ts',
      'index.js',
      'operations.d.ts',
      'package.json',
    ]);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'billing', type: 'module', private: true }),
    );
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', `./${packed!.filename}`], {
      cwd: project,
    });
    assert.deepEqual(
      readdirSync(join(project, 'node_modules')).filter((name) => !name.startsWith('.')),
      ['berth-client'],
    );
    const { stdout: imported } = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "import('berth-client').then((m) => console.log(Object.keys(m).sort().join()))",
      ],
      { cwd: project },
    );
    assert.equal(imported.trim(), 'BerthClient,BerthError,BerthHolderClient');
  });

  it('types each operation’s parameters and result for a consumer’s tsc', async () => {
    writeFileSync(
      join(project, 'use.ts'),
      [
        "import { BerthClient, type ListedAccount } from 'berth-client';",
        "const berth = new BerthClient({ url: 'https://panel.example.net:5555', user: 'billing', password: 'x' });",
        'export async function main(): Promise<string[]> {',
        "  const created = await berth.call('createacct', { user: 'a', domain: 'a.example', email: 'a@b.example', package: 'default', quota: 10 });",
        "  const status: 'on' | 'off' = created.shell.status;",
        "  const { accounts } = await berth.call('listaccts');",
        '  const first: ListedAccount | undefined = Object.values(accounts)[0];',
        "  // @ts-expect-error quota takes a number or 'unlimited'",
        "  await berth.call('editquota', { user: 'a', quota: 'lots' });",
        '  // @ts-expect-error listaccts answers no such field',
        "  (await berth.call('listaccts')).users;",
        "  const { url, expires } = await berth.call('create_user_session', { user: 'a', page: 'email' });",
        '  const seconds: number = expires;',
        '  // @ts-expect-error the panel has no such page',
        "  await berth.call('create_user_session', { user: 'a', page: 'settings' });",
        "  return [status, first?.is_suspended ?? 'no', url, String(seconds)];",
        '}',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'es2022', module: 'nodenext', strict: true, noEmit: true, types: [] },
        files: ['use.ts'],
      }),
    );
    await run(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', project]);
  });
});
