// Decoding an ID back into its parts, for GET /v1/decode/:tag/:id and gRPC's Decode: the same
// checks and the same answer on both, from the read side of the ID service (how an ID of each
// kind of tag decodes is the kind's: service/kinds/*.ts).
import type { Decoded, IdService } from '../service/id-service.js';

export type { Decoded };

/**
 * Decodes an ID of a tag the token opens (a protected tag's layout is not told to anyone else).
 * `staff`: the request carries the admin or viewer token, which opens every tag and is the
 * only credential that decodes a permuted tag's IDs.
 */
export function decodeId(
  ids: IdService,
  tagName: string,
  idText: string,
  token: string | undefined,
  staff = false,
): Promise<Decoded> {
  return ids.reads.decode(tagName, idText, token, staff);
}
