// HTTP load: single IDs (`GET /v1/id/:tag`) and batches (`GET /v1/ids/:tag?count=`), each loop
// one sequential client going round the tags.
import type { LoadContext, Track } from '../load-context.js';
import { Pace } from '../pace.js';
import { APP, TAGS } from '../tags.js';

const TIMEOUT_MS = 10000;

async function get(ctx: LoadContext, kind: string, track: Track, path: string): Promise<void> {
  const sent = performance.now();
  try {
    const res = await fetch(`${ctx.at.url}${path}`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    const body = (await res.json()) as { id?: string; ids?: string[]; error?: { code: string; message: string } };
    const answered = performance.now();
    const ids = body.ids ?? (body.id === undefined ? undefined : [body.id]);
    if (res.status !== 200 || !ids) {
      ctx.fail(kind, body.error?.code ?? `HTTP ${res.status}`, `${path}: ${JSON.stringify(body)}`);
      return;
    }
    ctx.latency.add(kind, answered - sent);
    track.answer(sent, answered, ids);
  } catch (err) {
    ctx.fail(kind, (err as Error).name, `${path}: ${(err as Error).message}`);
  }
}

const query = (track: Track) => (track.tag.mode === 'rule' ? `app=${APP}` : '');

export async function httpSingleLoop(ctx: LoadContext, client: string, perSecond: number): Promise<void> {
  const tracks = ctx.tracks(client, TAGS);
  const pace = new Pace(perSecond * ctx.rate);
  for (let i = 0; ctx.running; i++) {
    const track = tracks[i % tracks.length];
    const q = query(track);
    await get(ctx, 'http single', track, `/v1/id/${track.tag.tag}${q ? `?${q}` : ''}`);
    await pace.wait();
  }
}

export async function httpBatchLoop(ctx: LoadContext, client: string, perSecond: number, count: number): Promise<void> {
  const tracks = ctx.tracks(client, TAGS);
  const pace = new Pace(perSecond * ctx.rate);
  for (let i = 0; ctx.running; i++) {
    const track = tracks[i % tracks.length];
    const q = query(track);
    await get(ctx, 'http batch', track, `/v1/ids/${track.tag.tag}?count=${count}${q ? `&${q}` : ''}`);
    await pace.wait();
  }
}
