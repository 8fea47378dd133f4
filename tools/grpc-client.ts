// A client of idmint.v1.Ids generated at run time from the shipped proto with
// @grpc/proto-loader, as a user of the package would make one, with promise wrappers.
import { fileURLToPath } from 'node:url';
import {
  credentials,
  loadPackageDefinition,
  Metadata,
  type Client,
  type ClientReadableStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

export const PROTO_ROOT = fileURLToPath(new URL('../proto/', import.meta.url));

export interface Block {
  ids: string[];
  ranges: { first: string; last: string }[];
}
export interface DecodeAnswer {
  mode: string;
  id: string;
  parts?: string;
  segment?: { seq: string; shard: number; app_id: number } | null;
  snowflake?: { timestamp: string; time: string; worker_id: number; sequence: number } | null;
}

type Unary<Req, Res> = (req: Req, md: Metadata, cb: (err: ServiceError | null, res: Res) => void) => void;
interface IdsStub extends Client {
  Next: Unary<Record<string, unknown>, { ids: string[] }>;
  Decode: Unary<Record<string, unknown>, DecodeAnswer>;
  Take(req: Record<string, unknown>, md?: Metadata): ClientReadableStream<Block>;
}

export class IdsClient {
  readonly stub: IdsStub;

  constructor(port: number) {
    const def = loadSync('idmint/v1/ids.proto', {
      includeDirs: [PROTO_ROOT],
      keepCase: true,
      longs: String,
      defaults: true,
      oneofs: true,
    });
    const Ids = (
      loadPackageDefinition(def) as unknown as {
        idmint: { v1: { Ids: new (addr: string, creds: ReturnType<typeof credentials.createInsecure>) => IdsStub } };
      }
    ).idmint.v1.Ids;
    this.stub = new Ids(`127.0.0.1:${port}`, credentials.createInsecure());
  }

  static md(entries: Record<string, string> = {}): Metadata {
    const md = new Metadata();
    for (const [k, v] of Object.entries(entries)) md.set(k, v);
    return md;
  }

  next(req: Record<string, unknown>, md = IdsClient.md()): Promise<string[]> {
    return new Promise((resolve, reject) =>
      this.stub.Next(req, md, (err, res) => (err ? reject(err) : resolve(res.ids))),
    );
  }

  decode(req: Record<string, unknown>, md = IdsClient.md()): Promise<DecodeAnswer> {
    return new Promise((resolve, reject) =>
      this.stub.Decode(req, md, (err, res) => (err ? reject(err) : resolve(res))),
    );
  }

  /** Every block of a take, and the error it ended with (none when it ended OK). */
  take(req: Record<string, unknown>, md = IdsClient.md()): Promise<{ blocks: Block[]; error?: ServiceError }> {
    const call = this.stub.Take(req, md);
    const blocks: Block[] = [];
    return new Promise((resolve) => {
      call.on('data', (b: Block) => blocks.push(b));
      call.on('error', (error: ServiceError) => resolve({ blocks, error }));
      call.on('end', () => resolve({ blocks }));
    });
  }

  close(): void {
    this.stub.close();
  }
}

/** The failure of a call: status code, idmint code (trailing metadata) and message. */
export async function failure(
  p: Promise<unknown>,
): Promise<{ code: number; idmint: string; details: string; md: Metadata }> {
  try {
    await p;
  } catch (err) {
    const e = err as ServiceError;
    return { code: e.code, idmint: String(e.metadata.get('idmint-code')[0] ?? ''), details: e.details, md: e.metadata };
  }
  throw new Error('the call succeeded; a failure was expected');
}
