// Decoding an ID back into its parts, for GET /v1/decode/:tag/:id and gRPC's Decode: the same
// checks and the same answer on both. The counter of a permuted tag's ID is what its
// permutation hides, so only the admin and viewer tokens decode those.
import { counterLimit, unpackId } from '../core/layout.js';
import { domainMax } from '../core/permute.js';
import { decode } from '../core/snowflake-layout.js';
import { IdmintError, invalid } from '../errors.js';
import type { IdService } from '../service/id-service.js';

export type Decoded =
  | { mode: 'segment'; id: string; seq: string; shard: number; app_id: number; stride: number; offset: number; counter: string }
  | { mode: 'snowflake'; id: string; timestamp: string; time: number; worker_id: number; sequence: number };

/** The pattern of an ID accepted for decoding (then also checked to be below 2^63). */
export const DECODE_ID = /^[0-9]{1,19}$/;

/**
 * Decodes an ID of a tag the token opens (a protected tag's layout is not told to anyone else).
 * `staff`: the request carries the admin or viewer token, which opens every tag and is the
 * only credential that decodes a permuted tag's IDs.
 */
export async function decodeId(ids: IdService, tagName: string, idText: string, token: string | undefined, staff = false): Promise<Decoded> {
  if (!DECODE_ID.test(idText)) throw invalid('id must be a decimal of 1 to 19 digits');
  const tag = staff ? await ids.reads.definition(tagName) : await ids.reads.access(tagName, token);
  if (tag.permute && !staff) {
    throw new IdmintError(
      'UNAUTHORIZED',
      `the IDs of tag "${tag.tag}" are permuted: decoding one tells its counter, so it needs the admin or viewer token (Authorization: Bearer)`,
    );
  }
  // Rule IDs are rendered strings: a number has no seq, shard or time to decode back to.
  if (tag.mode === 'rule') throw invalid(`tag "${tag.tag}" is a rule tag: its IDs are formatted strings, not packed integers, so there is nothing to decode`);
  const id = BigInt(idText);
  if (id > (1n << 63n) - 1n) throw invalid('id must be below 2^63');
  if (tag.mode === 'snowflake') {
    const d = decode(tag.snowflake, id);
    return { mode: 'snowflake', id: idText, timestamp: d.timestamp.toISOString(), time: d.time, worker_id: d.workerId, sequence: d.sequence };
  }
  const p = unpackId(tag, id);
  if (tag.permute) {
    // Any value of the domain is some counter's ID; one whose counter lies above the tag's
    // limit was never one of this tag's.
    if (p.counter === undefined) throw invalid(`${idText} is not an ID of tag "${tag.tag}" (its permuted IDs lie from 1 to ${domainMax(tag.permute)})`);
    if (p.counter > BigInt(counterLimit(tag, BigInt(tag.maxIdLimit))))
      throw invalid(`${idText} is not an ID of tag "${tag.tag}" (it maps to counter ${p.counter}, above the tag's max_id_limit ${tag.maxIdLimit})`);
  }
  if (tag.layout === 'sharded' && (p.appId !== tag.appId || p.shard >= tag.shards)) {
    throw invalid(`${idText} is not an ID of tag "${tag.tag}" (app_id ${p.appId}, shard ${p.shard})`);
  }
  if (p.counter === undefined) {
    throw invalid(`${idText} is not an ID of tag "${tag.tag}" (its sequence value ${p.seq} is not ${tag.offset} mod ${tag.stride})`);
  }
  return {
    mode: 'segment',
    id: idText,
    seq: p.seq.toString(),
    shard: p.shard,
    app_id: p.appId,
    stride: tag.stride,
    offset: tag.offset,
    counter: p.counter.toString(),
  };
}
