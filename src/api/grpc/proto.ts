// The shipped schema, proto/idmint/v1/ids.proto, loaded at run time with @grpc/proto-loader.
// The proto/ folder sits at the package root; this module runs from src/api/grpc/ or from a
// compiled copy deeper under dist/, so it is looked for in each folder above the module.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPackageDefinition, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';

/** The schema's path under the package's proto/ folder. */
export const PROTO_FILE = 'idmint/v1/ids.proto';

/** How idmint reads messages: field names as written, 64-bit integers as decimal strings. */
export const LOADER_OPTIONS: Options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

/** The package's proto/ folder, found from `from` (a module URL) upwards. */
export function findProtoRoot(from: string | URL = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  for (let i = 0; i < 6; i++) {
    const root = join(dir, 'proto');
    if (existsSync(join(root, PROTO_FILE))) return root;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new Error(`${PROTO_FILE} not found in a proto/ folder above ${fileURLToPath(from)}`);
}

/** The service definition of idmint.v1.Ids. */
export function idsService(protoRoot = findProtoRoot()): ServiceDefinition {
  const def = loadSync(PROTO_FILE, { ...LOADER_OPTIONS, includeDirs: [protoRoot] });
  const pkg = loadPackageDefinition(def) as unknown as { idmint: { v1: { Ids: { service: ServiceDefinition } } } };
  return pkg.idmint.v1.Ids.service;
}

/**
 * The service with `Take` blocks written already encoded: `encode` turns a TakeBlock into its
 * message bytes, and the service's serializer passes such bytes through unchanged. A block
 * waiting to be sent is then one buffer of exactly its size on the wire, outside the JS heap,
 * instead of an array of a string per ID (about four times the bytes, and objects for the
 * garbage collector to walk on every major collection).
 */
export function idsServiceEncodingTakes(protoRoot = findProtoRoot()): {
  service: ServiceDefinition;
  encode: (block: object) => Buffer;
} {
  const service = idsService(protoRoot);
  const take = service.Take;
  const encode = take.responseSerialize as (block: object) => Buffer;
  const responseSerialize = (v: object): Buffer => (Buffer.isBuffer(v) ? v : encode(v));
  return { service: { ...service, Take: { ...take, responseSerialize } }, encode };
}
