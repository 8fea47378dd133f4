// gRPC load (docs/GRPC.md): `Next` of one ID on every tag, each loop one sequential client going
// round the tags, and `Take` of every tag in its formats (drivers/takes.ts), one take at a time.
import type { ServiceError } from '@grpc/grpc-js';
import { IdsClient } from '../../../tools/grpc-client.js';
import type { LoadContext, Track } from '../load-context.js';
import { Pace } from '../pace.js';
import { APP, TAGS } from '../tags.js';
import { TAKE_CASES } from './takes.js';

const failure = (err: unknown) => {
  const e = err as ServiceError;
  return String(e.metadata?.get('idmint-code')[0] ?? e.code ?? 'error');
};

const app = (track: Track) => (track.tag.mode === 'rule' ? { app: APP } : {});

export async function grpcNextLoop(ctx: LoadContext, client: string, perSecond: number): Promise<void> {
  const tracks = ctx.tracks(client, TAGS);
  const pace = new Pace(perSecond * ctx.rate);
  const ids = new IdsClient(ctx.at.grpcPort);
  try {
    for (let i = 0; ctx.running; i++) {
      const track = tracks[i % tracks.length];
      const sent = performance.now();
      try {
        const got = await ids.next({ tag: track.tag.tag, count: 1, ...app(track) });
        const answered = performance.now();
        ctx.latency.add('grpc next', answered - sent);
        track.answer(sent, answered, got);
      } catch (err) {
        ctx.fail('grpc next', failure(err), (err as Error).message);
      }
      await pace.wait();
    }
  } finally {
    ids.close();
  }
}

export async function grpcTakeLoop(ctx: LoadContext, client: string, perSecond: number): Promise<void> {
  const tracks = new Map(TAGS.map((t) => [t.tag, ctx.track(client, t)]));
  const pace = new Pace(perSecond * ctx.rate);
  const ids = new IdsClient(ctx.at.grpcPort);
  try {
    for (let i = 0; ctx.running; i++) {
      const c = TAKE_CASES[i % TAKE_CASES.length];
      const track = tracks.get(c.tag.tag)!;
      const sent = performance.now();
      const { blocks, error } = await ids.take({
        tag: c.tag.tag,
        count: c.count,
        block: c.block,
        ranges: c.format === 'ranges',
        ...app(track),
      });
      const answered = performance.now();
      let got = 0;
      let min: bigint | undefined;
      let max: bigint | undefined;
      for (const b of blocks) {
        for (const r of b.ranges) {
          const first = BigInt(r.first);
          const last = BigInt(r.last);
          track.log.add(first, last);
          got += Number(last - first) + 1;
          if (min === undefined || first < min) min = first;
          if (max === undefined || last > max) max = last;
        }
        for (const s of b.ids) {
          const id = BigInt(s);
          track.log.add(id);
          got++;
          if (min === undefined || id < min) min = id;
          if (max === undefined || id > max) max = id;
        }
      }
      if (min !== undefined && max !== undefined) track.order?.add(sent, answered, min, max);
      if (error) ctx.fail('grpc take', failure(error), `${c.tag.tag} ${c.format}: ${error.message}`);
      else if (got !== c.count) ctx.fail('grpc take', 'short', `${c.tag.tag} ${c.format}: ${got} of ${c.count} IDs`);
      else ctx.latency.add('grpc take', answered - sent);
      await pace.wait();
    }
  } finally {
    ids.close();
  }
}
