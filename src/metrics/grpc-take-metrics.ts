// gRPC Take calls' buffers on /metrics: the bytes their blocks hold in the process until HTTP/2
// takes them (bounded by GRPC_MAX_BUFFERED_BYTES plus one block per call), and how often a call
// paused taking IDs because its own bound (STREAM_MAX_BUFFER_BYTES) or the process's was full.
// Refused calls (GRPC_MAX_TAKES_PER_PEER) count in idmint_errors_total{transport="grpc",code="LIMIT_EXCEEDED"}.
import { Counter, Gauge, type Registry } from 'prom-client';

export interface GrpcTakeObserver {
  held(bytes: number): void;
  waited(bound: 'call' | 'process'): void;
}

export function registerGrpcTakeMetrics(registry: Registry): GrpcTakeObserver {
  const registers = [registry];
  const buffered = new Gauge({
    name: 'idmint_grpc_take_buffered_bytes',
    help: 'Bytes of gRPC Take blocks written and not yet taken by HTTP/2, across all calls (at most GRPC_MAX_BUFFERED_BYTES plus one block per call)',
    registers,
  });
  buffered.set(0);
  const waits = new Counter({
    name: 'idmint_grpc_take_waits_total',
    help: 'Times a gRPC Take call paused (took no IDs) until HTTP/2 took its blocks: bound "call" when its own STREAM_MAX_BUFFER_BYTES were full, "process" when GRPC_MAX_BUFFERED_BYTES across all calls were',
    labelNames: ['bound'],
    registers,
  });
  for (const bound of ['call', 'process']) waits.inc({ bound }, 0);
  return {
    held: (bytes) => buffered.set(bytes),
    waited: (bound) => waits.inc({ bound }),
  };
}
