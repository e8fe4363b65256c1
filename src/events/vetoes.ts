// Veto hooks: executables in <data-dir>/hooks/pre-<operation>/ run before a vetoable call acts,
// with the call's parameters (passwords left out) as JSON on standard input. A non-zero exit
// refuses the call with 403. Only the operations that declare themselves vetoable can be vetoed.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { apiError } from '../core/errors.ts';
import type { Operation, RawParams } from '../operations/operation.ts';
import { actorName, type Principal, resellerOf } from '../operations/principal.ts';
import type { Services } from '../services.ts';
import { hooksDir } from './events.ts';

export async function runVetoHooks(
  services: Services,
  operation: Operation,
  principal: Principal,
  params: RawParams,
): Promise<void> {
  if (!operation.vetoable) return;
  const dir = join(hooksDir(services), `pre-${operation.name}`);
  if (!existsSync(dir)) return;
  const data: Record<string, string> = {};
  for (const name of Object.keys(operation.params)) {
    const value = params.get(name)?.[0];
    if (typeof value === 'string' && name !== 'password') data[name] = value;
  }
  const input = JSON.stringify({
    operation: operation.name,
    api_user: actorName(principal),
    reseller: resellerOf(principal)?.user ?? null,
    principal: principal.kind,
    data,
  });
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const stat = statSync(path);
    if (name.startsWith('.') || !stat.isFile() || (stat.mode & 0o111) === 0) continue;
    const refusal = await new Promise<string | null>((resolve) => {
      const child = execFile(
        path,
        [],
        { timeout: 15_000, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } },
        (error, _out, stderr) =>
          resolve(error ? String(stderr).trim().split('\n').pop() || `exit ${error.code ?? 'signal'}` : null),
      );
      // A hook may exit without reading its input: that is its answer, not an error of ours.
      child.stdin?.on('error', () => {});
      child.stdin?.end(input);
    });
    if (refusal !== null) {
      throw apiError('forbidden', {
        reason: `The ${operation.name} call was refused by the hook ${name}: ${refusal.slice(0, 200)}`,
      });
    }
  }
}
