// idmint as it was at an older commit (`npm run bench:idempotency -- --before COMMIT`): served
// in the same rounds, so that the unkeyed request before keys is measured beside today's.
import { execFileSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../tools/child.js';
import { startServer, type Server } from '../server.js';

/**
 * idmint as it was at `commit`, exported (git archive) into a directory of its own that uses this
 * checkout's node_modules, started by startServer from there: for the unkeyed request before keys.
 */
export async function startAt(
  commit: string,
  dir: string,
  env: Record<string, string>,
  cpu: number | undefined,
): Promise<Server> {
  const tar = join(dir, 'src.tar');
  execFileSync('git', ['archive', '--format=tar', '-o', tar, commit], { cwd: ROOT });
  execFileSync('tar', ['-xf', tar, '-C', dir]);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return startServer(`idmint at ${commit}`, ['src/cli.ts', 'serve'], { cwd: dir, cpu, env });
}
