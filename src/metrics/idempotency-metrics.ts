// Idempotency keys on /metrics: how often a keyed request was answered from a kept answer (a
// retry, or a concurrent request under the same key), and how often one was refused because the
// key was used for another request, another request under it was still being served, or the tag
// held too many keys.
import type { Registry } from 'prom-client';
import { FastCounter, type TagLabelled } from './fast-metrics.js';

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

/** The counters, and the metrics they keep (labelled by tag). */
export interface IdempotencyMetrics {
  readonly counters: IdempotencyCounters;
  readonly tagged: readonly TagLabelled[];
}

export function registerIdempotencyMetrics(registry: Registry): IdempotencyMetrics {
  const replays = new FastCounter(
    'idmint_idempotent_replays_total',
    'Keyed requests answered with the kept answer of their idempotency key (retries, and concurrent requests under one key), per tag',
    registry,
  );
  const mismatches = new FastCounter(
    'idmint_idempotency_key_mismatches_total',
    'Keyed requests refused because their idempotency key was used for a different request (IDEMPOTENCY_KEY_MISMATCH), per tag',
    registry,
  );
  const full = new FastCounter(
    'idmint_idempotency_keys_full_total',
    'Keyed requests refused because the tag held IDEMPOTENCY_MAX_KEYS live keys or IDEMPOTENCY_MAX_BYTES of them (IDEMPOTENCY_KEYS_FULL), per tag',
    registry,
  );
  const inFlight = new FastCounter(
    'idmint_idempotency_keys_in_flight_total',
    'Keyed requests refused because another request under their idempotency key was still being served (IDEMPOTENCY_KEY_IN_FLIGHT), per tag',
    registry,
  );
  return {
    counters: {
      replay: (tag) => replays.inc({ tag }),
      mismatch: (tag) => mismatches.inc({ tag }),
      full: (tag) => full.inc({ tag }),
      inFlight: (tag) => inFlight.inc({ tag }),
    },
    tagged: [replays, mismatches, full, inFlight],
  };
}
