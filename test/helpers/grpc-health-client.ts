// Standard clients of the gRPC health and reflection services, as tools such as grpcurl or a
// Kubernetes gRPC probe use them: the health client from grpc-health-check's own service
// definition, the reflection client generated from @grpc/reflection's shipped protos.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  credentials,
  loadPackageDefinition,
  makeClientConstructor,
  type Client,
  type ClientDuplexStream,
  type ClientReadableStream,
  type ServiceDefinition,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadFileDescriptorSetFromBuffer, loadSync, type PackageDefinition } from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';

type Status = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
interface HealthStub extends Client {
  Check(req: { service: string }, cb: (err: ServiceError | null, res: { status: Status }) => void): void;
  Watch(req: { service: string }): ClientReadableStream<{ status: Status }>;
}

export class HealthClient {
  private readonly stub: HealthStub;

  constructor(port: number) {
    const Health = makeClientConstructor(healthService as unknown as ServiceDefinition, 'grpc.health.v1.Health');
    this.stub = new Health(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as HealthStub;
  }

  /** The status of `service` ('' for the server), or the call's error. */
  check(service = ''): Promise<Status> {
    return new Promise((resolve, reject) =>
      this.stub.Check({ service }, (err, res) => (err ? reject(err) : resolve(res.status))),
    );
  }

  /** A Watch stream: `next(want)` resolves when a status other than the last one seen is `want`. */
  watch(service = ''): Watch {
    return new Watch(this.stub.Watch({ service }));
  }

  close(): void {
    this.stub.close();
  }
}

export class Watch {
  readonly seen: Status[] = [];
  /** Resolves with the stream's end: 'ended' (OK) or the error's message. */
  readonly ended: Promise<string>;
  private wake: (() => void) | undefined;

  constructor(readonly call: ClientReadableStream<{ status: Status }>) {
    call.on('data', (m: { status: Status }) => {
      this.seen.push(m.status);
      this.wake?.();
    });
    this.ended = new Promise((resolve) => {
      call.on('error', (err: Error) => resolve(err.message));
      call.on('end', () => resolve('ended'));
    });
    this.ended.then(() => this.wake?.());
  }

  /** Waits until the stream has sent `want` at index `from` or later; returns its index. */
  async until(want: Status, from = 0, timeoutMs = 10_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.seen.indexOf(want, from);
      if (i >= 0) return i;
      if (Date.now() > deadline)
        throw new Error(`Watch: no ${want} after index ${from} within ${timeoutMs} ms (seen ${this.seen.join(', ')})`);
      await Promise.race([new Promise<void>((r) => (this.wake = r)), new Promise((r) => setTimeout(r, 100))]);
    }
  }

  cancel(): void {
    this.call.cancel();
  }
}

/** The reflection protos @grpc/reflection ships (v1 and v1alpha). */
const REFLECTION_PROTOS = join(dirname(createRequire(import.meta.url).resolve('@grpc/reflection')), '..', 'proto');

interface ReflectionAnswer {
  list_services_response?: { service: { name: string }[] };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_code: number; error_message: string };
}
interface ReflectionStub extends Client {
  ServerReflectionInfo(): ClientDuplexStream<Record<string, unknown>, ReflectionAnswer>;
}

export class ReflectionClient {
  private readonly stub: ReflectionStub;

  constructor(port: number, version: 'v1' | 'v1alpha' = 'v1') {
    const def = loadSync(`grpc/reflection/${version}/reflection.proto`, {
      includeDirs: [REFLECTION_PROTOS],
      keepCase: true,
      defaults: true,
      oneofs: true,
    });
    const pkg = loadPackageDefinition(def) as unknown as {
      grpc: {
        reflection: Record<
          string,
          { ServerReflection: new (addr: string, c: ReturnType<typeof credentials.createInsecure>) => ReflectionStub }
        >;
      };
    };
    this.stub = new pkg.grpc.reflection[version].ServerReflection(`127.0.0.1:${port}`, credentials.createInsecure());
  }

  /** One request on its own stream, and its one answer. */
  private ask(req: Record<string, unknown>): Promise<ReflectionAnswer> {
    return new Promise((resolve, reject) => {
      const call = this.stub.ServerReflectionInfo();
      call.once('data', (m: ReflectionAnswer) => {
        resolve(m);
        call.end();
      });
      call.once('error', reject);
      call.write(req);
    });
  }

  async listServices(): Promise<string[]> {
    const a = await this.ask({ list_services: '*' });
    if (!a.list_services_response) throw new Error(`no service list: ${JSON.stringify(a.error_response)}`);
    return a.list_services_response.service.map((s) => s.name);
  }

  /** The file descriptors (with their imports) of the file declaring `symbol`, as a package definition. */
  async fileContainingSymbol(symbol: string): Promise<PackageDefinition> {
    const a = await this.ask({ file_containing_symbol: symbol });
    if (!a.file_descriptor_response)
      throw new Error(`no descriptor for ${symbol}: ${JSON.stringify(a.error_response)}`);
    // A FileDescriptorSet is field 1 (bytes) repeated: one length-prefixed entry per file.
    const set = Buffer.concat(
      a.file_descriptor_response.file_descriptor_proto.flatMap((f) => [Buffer.from([0x0a]), varint(f.length), f]),
    );
    return loadFileDescriptorSetFromBuffer(set, { keepCase: true, longs: String, defaults: true, oneofs: true });
  }

  close(): void {
    this.stub.close();
  }
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}
