// The one reading of `Authorization: Bearer <token>`, for every credential idmint takes that way
// (client tokens over HTTP and gRPC, the admin and viewer tokens, the metrics token). The
// scheme is matched in any case, as RFC 9110 (section 11.1) makes auth schemes
// case-insensitive: `bearer`, `BEARER` and `Bearer` are the same.

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** The token of a Bearer credential; undefined when the value is absent or not one. */
export function bearerToken(authorization: unknown): string | undefined {
  if (typeof authorization !== 'string') return undefined;
  return BEARER.exec(authorization)?.[1];
}
