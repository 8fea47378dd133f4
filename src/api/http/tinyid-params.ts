// Tinyid's request parameters as its servlet reads them: the query string's first, then the
// form body's (tinyid-client POSTs application/x-www-form-urlencoded). Read by Tinyid's routes
// and by the per-source limits, which charge a nextId call before the route serves it.
import type { FastifyRequest } from 'fastify';

export type TinyidParams = (name: string) => string | undefined;

export function tinyidParams(req: FastifyRequest): TinyidParams {
  const query = req.query as Record<string, string | string[] | undefined>;
  const form = typeof req.body === 'string' && req.body !== '' ? new URLSearchParams(req.body) : undefined;
  return (name) => {
    const value = query[name];
    if (value !== undefined) return Array.isArray(value) ? value[0] : value;
    return form?.get(name) ?? undefined;
  };
}
