// The bulk takes of the soak: which tag in which format, over the websocket stream
// (docs/STREAM.md) and gRPC Take (docs/GRPC.md). Segment and snowflake tags go as binary (gRPC:
// ids) and as ranges; rule tags only as json (gRPC: ids), the one format of formatted IDs.
import { TAGS, type SoakTag } from '../tags.js';

export type Format = 'binary' | 'ranges' | 'json';

export interface TakeCase {
  readonly tag: SoakTag;
  readonly format: Format;
  readonly count: number;
  readonly block: number;
}

/** IDs per take: rule IDs are formatted one by one, so fewer of them. */
const COUNT = { segment: 20000, snowflake: 20000, rule: 2000 };

export const TAKE_CASES: readonly TakeCase[] = TAGS.flatMap((tag) =>
  (tag.mode === 'rule' ? (['json'] as const) : (['binary', 'ranges'] as const)).map((format) => ({
    tag,
    format,
    count: COUNT[tag.mode],
    block: 5000,
  })),
);
