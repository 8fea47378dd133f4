// Functions the pre-router check (pre-router-hooks.ts) must recognise on a route after Fastify
// has replaced them by bound copies, which keep only their target's name (`bound <name>`).
import { randomBytes } from 'node:crypto';

/**
 * fn, renamed `<name>#<random>`: a name no other function has in this process, kept by the
 * bound copies Fastify makes (`bound <name>#<random>`), so the route check can tell it from any other.
 */
export function marked<F extends (...args: never[]) => unknown>(fn: F, name: string): F {
  Object.defineProperty(fn, 'name', { value: `${name}#${randomBytes(6).toString('hex')}` });
  return fn;
}

/** f was made by `marked`. */
export const isMarked = (f: unknown): f is (...args: never[]) => unknown =>
  typeof f === 'function' && /#[0-9a-f]{12}$/.test(f.name);
