// What a transport asks the one issuing door (IdService.issue) for, and the checks that a
// request fits the tag it names, made once, inside the door, whichever transport asks: the
// options fit the tag's mode (id-options.ts), the answer's shape suits the tag (counter runs
// only where its kind has them, tag-kinds.ts; a block a client holds itself needs
// `order: node`), and the tag is one the caller's protocol can carry (Leaf's routes serve one
// mode each, Tinyid's plain segment IDs only, with a batch limit of their own).
import type { Mode } from '../core/tag-spec.js';
import { invalid } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import type { IdOptions } from './id-options.js';
import { kindOf } from './tag-kinds.js';

/** What the caller's protocol can carry; anything else is refused before anything is taken. */
export interface Accepts {
  /** The modes served (Leaf's `/api/segment/get` serves segment tags only). */
  readonly modes?: readonly Mode[];
  /** Only plain segment IDs: no shard key in them, no formatted strings (Tinyid). */
  readonly plain?: boolean;
  /** The largest count, and the name the protocol gives it (Tinyid's batchSize). */
  readonly maxCount?: { readonly max: number; readonly name: string };
  /** Where a tag of another mode is served (Leaf: the route of its mode), for the refusal. */
  readonly elsewhere?: (mode: Mode, tag: string) => string;
}

interface RequestBase extends IdOptions {
  readonly tag: string;
  readonly accepts?: Accepts;
  /**
   * An idempotency key (one ID or a list of IDs only): every request with the same key for the
   * tag, within its retention, is answered with the IDs the first one was (idempotency.ts).
   */
  readonly idempotencyKey?: string;
}

/** One ID, as a string: at once when memory can answer, else a promise. */
export interface OneRequest extends RequestBase {
  readonly as: 'one';
  /**
   * Answer undefined, having taken nothing, instead of going to the store, when memory cannot
   * answer at once or through an `order: global` tag's coalescer (the pre-router path steps
   * aside to the router then).
   */
  readonly stepAside?: boolean;
}

/** count IDs as strings in issue order (0: none, after every check). */
export interface IdsRequest extends RequestBase {
  readonly as: 'ids';
  readonly count: number;
  /**
   * Drawn by a bulk take (websocket stream, gRPC Take) for its blocks: not counted among the
   * single requests that bulk takes yield the process to (api/bulk-turns.ts).
   */
  readonly bulk?: boolean;
}

/**
 * count IDs of a segment tag as ascending counter runs with their packing (bulk consumers):
 * from this process's block for an `order: node` tag.
 */
export interface RunsRequest extends RequestBase {
  readonly as: 'runs';
  readonly count: number;
}

/**
 * A block a client holds and serves itself (Tinyid's segments), straight from the store, as a
 * process fills its own: `order: node` tags only, since IDs answered by others meanwhile are
 * higher than the ones the client still holds. count: the tag's node block when absent.
 */
export interface HeldRequest extends RequestBase {
  readonly as: 'held';
  readonly count?: number;
}

export type IssueRequest = OneRequest | IdsRequest | RunsRequest | HeldRequest;

/** The number of IDs a request asks for, given the tag it resolved to. */
export function countOf(req: IssueRequest, tag: StoredTag): number {
  if (req.as === 'one') return 1;
  if (req.as === 'held') return req.count ?? tag.nodeBlock;
  return req.count;
}

/**
 * Refuses (INVALID_ARGUMENT) a request that does not fit the tag it resolved to, in this order:
 * what the caller's protocol carries (modes, plain IDs), the request's options, the answer's
 * shape, the caller's count limit.
 */
export function checkRequest(tag: StoredTag, req: IssueRequest): void {
  const accepts = req.accepts;
  if (accepts?.modes !== undefined && !accepts.modes.includes(tag.mode)) {
    const hint = accepts.elsewhere ? `; use ${accepts.elsewhere(tag.mode, tag.tag)}` : '';
    throw invalid(`tag "${tag.tag}" is a ${tag.mode} tag${hint}`);
  }
  if (accepts?.plain) {
    const why = kindOf(tag).notPlain(tag);
    if (why !== undefined) throw invalid(why);
  }
  kindOf(tag).checkOptions(tag, req);
  if ((req.as === 'runs' || req.as === 'held') && req.idempotencyKey !== undefined)
    throw invalid(
      'an idempotency key (the Idempotency-Key header, idempotency-key metadata or idempotency_key field) applies to requests for one ID or a list of IDs (at most 1000), not to counter runs or held blocks such as segments; send the request without it',
    );
  if (req.as === 'runs' || req.as === 'held') {
    // Counter runs are a segment tag's whose IDs are a line of its counter (kinds/*.ts).
    const why = kindOf(tag).noRuns(tag, req.as);
    if (why !== undefined) throw invalid(why);
  }
  if (req.as === 'held' && tag.order !== 'node') {
    throw invalid(
      `tag "${tag.tag}" has order global: a block held by a client would issue IDs below ones answered after it; blocks are served for order node tags`,
    );
  }
  const count = countOf(req, tag);
  // A count that is not a whole number (Infinity from "1e309", NaN, a fraction, past 2^53) is
  // refused here, at the door, before any source or queue sees it.
  if (!Number.isSafeInteger(count))
    throw invalid(`count must be a whole number of IDs, not ${count}; no IDs were handed out`);
  if (accepts?.maxCount !== undefined && count > accepts.maxCount.max) {
    throw invalid(
      `${accepts.maxCount.name} ${count} is above the largest, ${accepts.maxCount.max}; no IDs were handed out`,
    );
  }
}

/**
 * The caller's protocol carries the tag's IDs (Accepts' modes and plain IDs), for the answer
 * from memory; when it does not, the full way refuses with checkRequest's message.
 */
export function carries(tag: StoredTag, accepts: Accepts | undefined): boolean {
  if (accepts === undefined) return true;
  if (accepts.modes !== undefined && !accepts.modes.includes(tag.mode)) return false;
  return !accepts.plain || kindOf(tag).notPlain(tag) === undefined;
}
