// Requests refused, or datagrams dropped, because their source address was over one of its
// per-source limits (src/core/rate-bucket.ts): by transport and by the limit met. HTTP's 429s
// also count in idmint_errors_total as LIMIT_EXCEEDED, as every refusal does; so do UDP datagrams
// dropped at admission (a refusal that goes unanswered keeps its own code there).
import { Counter, type Registry } from 'prom-client';

/** The transports whose ID requests are limited per source. */
export const LIMITED_TRANSPORTS = ['http', 'leaf', 'tinyid', 'udp'] as const;
export type LimitedTransport = (typeof LIMITED_TRANSPORTS)[number];
export const SOURCE_LIMITS = ['ids', 'refusals'] as const;

/** idmint_source_limited_total. */
export interface SourceLimitCounter {
  inc(labels: { transport: LimitedTransport; limit: (typeof SOURCE_LIMITS)[number] }): void;
}

export function registerSourceLimitMetrics(registry: Registry): SourceLimitCounter {
  const limited = new Counter({
    name: 'idmint_source_limited_total',
    help: 'Requests refused (HTTP 429 LIMIT_EXCEEDED) or UDP datagrams dropped unanswered because their source address was over a per-source limit: limit "ids" (IDs of tags with a finite space per second), "refusals" (refused requests per second)',
    labelNames: ['transport', 'limit'],
    registers: [registry],
  });
  for (const transport of LIMITED_TRANSPORTS) for (const limit of SOURCE_LIMITS) limited.inc({ transport, limit }, 0);
  return limited;
}
