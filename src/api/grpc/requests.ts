// The messages of idmint.v1.Ids as they arrive (proto-loader objects: absent strings are '',
// 64-bit integers decimal strings) and their validation, with the HTTP API's and the stream's
// bounds. An empty string means absent, as proto3 cannot tell them apart.
import type { Metadata } from '@grpc/grpc-js';
import { TAG_NAME, TAG_NAME_CHARS } from '../../core/tag-name.js';
import { invalid } from '../../errors.js';
import type { IdOptions } from '../../service/id-options.js';
import { bearerToken } from '../credentials.js';
import { DEFAULT_BLOCK, type BulkLimits, type BulkTake } from '../../service/bulk-take.js';
import { MAX_BATCH } from '../../service/id-options.js';

export interface NextRequest {
  tag: string;
  count: number;
  key: string;
  app: string;
  salt: string;
  token: string;
  /** '' from a client built from the schema before the field existed. */
  idempotency_key?: string;
}
export interface NextResponse {
  ids: string[];
}
export interface TakeRequest {
  tag: string;
  count: string;
  block: number;
  key: string;
  app: string;
  salt: string;
  token: string;
  ranges: boolean;
}
export interface TakeBlock {
  ids?: string[];
  ranges?: { first: string; last: string }[];
}
export interface DecodeRequest {
  tag: string;
  id: string;
}
export interface DecodeResponse {
  mode: string;
  id: string;
  segment?: { seq: string; shard: number; app_id: number; stride: number; offset: number; counter: string };
  snowflake?: { timestamp: string; time: string; worker_id: number; sequence: number };
}

const MAX_TOKEN = 512;

export function checkTag(tag: string): string {
  if (!TAG_NAME.test(tag)) throw invalid(`tag must match ${TAG_NAME_CHARS}`);
  return tag;
}

function opt(value: string, name: string, max: number): string | undefined {
  if (value === '') return undefined;
  if (value.length > max) throw invalid(`${name} must be at most ${max} characters`);
  return value;
}

/**
 * A client token: the request's field, else the metadata `x-idmint-token: <token>` or
 * `authorization: Bearer <token>` (the scheme in any case), as the HTTP headers.
 */
export function tokenOf(field: string, md: Metadata): string | undefined {
  if (field !== '') return opt(field, 'token', MAX_TOKEN);
  const token = md.get('x-idmint-token')[0];
  if (typeof token === 'string') return token;
  return bearerToken(md.get('authorization')[0]);
}

/**
 * An idempotency key: the request's field, else the metadata `idempotency-key` (the service
 * checks what a key may be).
 */
function idempotencyKeyOf(field: string | undefined, md: Metadata): string | undefined {
  if (field !== undefined && field !== '') return field;
  const key = md.get('idempotency-key')[0];
  return typeof key === 'string' ? key : undefined;
}

/** Next's count (0 means 1) and options, as GET /v1/ids/:tag checks them. */
export function parseNext(
  request: NextRequest,
  md: Metadata,
): { tag: string; count: number; opts: IdOptions & { idempotencyKey?: string } } {
  const tag = checkTag(request.tag);
  const count = request.count === 0 ? 1 : request.count;
  if (!(count >= 1 && count <= MAX_BATCH)) throw invalid(`count must be from 1 to ${MAX_BATCH}`);
  return {
    tag,
    count,
    opts: {
      key: opt(request.key, 'key', 256),
      app: opt(request.app, 'app', 64),
      salt: opt(request.salt, 'salt', 64),
      token: tokenOf(request.token, md),
      idempotencyKey: idempotencyKeyOf(request.idempotency_key, md),
    },
  };
}

/** Take's request as the stream's take (docs/STREAM.md), with the same limits. */
export function parseTake(request: TakeRequest, md: Metadata, limits: BulkLimits): BulkTake {
  const tag = checkTag(request.tag);
  const count = /^\d{1,16}$/.test(request.count) ? Number(request.count) : NaN;
  if (!(count >= 1 && count <= limits.maxCount)) throw invalid(`count must be from 1 to ${limits.maxCount}`);
  const block = request.block === 0 ? Math.min(count, DEFAULT_BLOCK, limits.maxBlock) : request.block;
  if (!(block >= 1 && block <= limits.maxBlock)) throw invalid(`block must be from 1 to ${limits.maxBlock}`);
  return {
    tag,
    count,
    block,
    format: request.ranges ? 'ranges' : 'json',
    key: opt(request.key, 'key', 256),
    app: opt(request.app, 'app', 64),
    salt: opt(request.salt, 'salt', 64),
    token: tokenOf(request.token, md),
    // Take has no field for it: the metadata carries it, as for Next.
    idempotencyKey: idempotencyKeyOf(undefined, md),
  };
}
