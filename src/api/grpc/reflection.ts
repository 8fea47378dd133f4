// gRPC server reflection (grpc.reflection.v1 and v1alpha, from @grpc/reflection): clients such
// as grpcurl list the services and read their descriptors from the running server, without a
// copy of the proto files. It describes idmint.v1.Ids and the health service.
import { dirname, join } from 'node:path';
import type { Server } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { findProtoRoot, LOADER_OPTIONS, PROTO_FILE } from './proto.js';

const HEALTH_PROTO_FILE = join('health', 'v1', 'health.proto');

export function addReflectionService(server: Server, protoRoot = findProtoRoot()): void {
  // The health proto's include root: its path less health/v1/health.proto.
  const healthRoot = dirname(dirname(dirname(healthProtoPath)));
  const def = loadSync([PROTO_FILE, HEALTH_PROTO_FILE], { ...LOADER_OPTIONS, includeDirs: [protoRoot, healthRoot] });
  new ReflectionService(def).addToServer(server);
}
