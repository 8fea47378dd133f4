// Idempotency keys on /metrics: how often a keyed request was answered from a kept answer (a
// retry, or a concurrent request under the same key), and how often one was refused because the
// key was used for another request, another request under it was still being served, or the tag
// held too many keys.
import { Counter, type Registry } from 'prom-client';

/** What the idempotency keys count, per tag. */
export interface IdempotencyCounters {
  /** A keyed request answered with the kept answer of its key. */
  replay(tag: string): void;
  /** A keyed request refused: its key was used for a different request. */
  mismatch(tag: string): void;
  /** A keyed request refused: the tag held IDEMPOTENCY_MAX_KEYS live keys, or IDEMPOTENCY_MAX_BYTES of them. */
  full(tag: string): void;
  /** A keyed request refused: another request under its key was still being served. */
  inFlight(tag: string): void;
}

export function registerIdempotencyMetrics(registry: Registry): IdempotencyCounters {
  const registers = [registry];
  const replays = new Counter({
    name: 'idmint_idempotent_replays_total',
    help: 'Keyed requests answered with the kept answer of their idempotency key (retries, and concurrent requests under one key), per tag',
    labelNames: ['tag'],
    registers,
  });
  const mismatches = new Counter({
    name: 'idmint_idempotency_key_mismatches_total',
    help: 'Keyed requests refused because their idempotency key was used for a different request (IDEMPOTENCY_KEY_MISMATCH), per tag',
    labelNames: ['tag'],
    registers,
  });
  const full = new Counter({
    name: 'idmint_idempotency_keys_full_total',
    help: 'Keyed requests refused because the tag held IDEMPOTENCY_MAX_KEYS live keys or IDEMPOTENCY_MAX_BYTES of them (IDEMPOTENCY_KEYS_FULL), per tag',
    labelNames: ['tag'],
    registers,
  });
  const inFlight = new Counter({
    name: 'idmint_idempotency_keys_in_flight_total',
    help: 'Keyed requests refused because another request under their idempotency key was still being served (IDEMPOTENCY_KEY_IN_FLIGHT), per tag',
    labelNames: ['tag'],
    registers,
  });
  return {
    replay: (tag) => replays.inc({ tag }),
    mismatch: (tag) => mismatches.inc({ tag }),
    full: (tag) => full.inc({ tag }),
    inFlight: (tag) => inFlight.inc({ tag }),
  };
}
