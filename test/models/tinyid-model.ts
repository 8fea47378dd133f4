// An executable model of didi/tinyid, written from its source (files named below): what its
// tiny_id_info and tiny_id_token rows end as, and every ID its servers and tinyid-client
// generators handed out. Pure and deterministic.
//
// - A segment (tinyid-server service/impl/DbSegmentIdServiceImpl.java getNextSegmentId, dao/impl/
//   TinyIdInfoDAOImpl.java): read the row, "update tiny_id_info set max_id=?, update_time=now(),
//   version=version+1 where id=? and max_id=? and version=? and biz_type=?" with max_id + step;
//   on a lost race it reads again (Constants.RETRY times). The segment (convert) starts at
//   currentId = new max_id - step, ends at maxId = new max_id, with the row's delta and
//   remainder, loadingId = currentId + step * 20 / 100.
// - Handing out (tinyid-base entity/SegmentId.java): init() moves currentId to the value below
//   the first one that is remainder (mod delta); nextId() adds delta, answers OVER above maxId,
//   LOADING from loadingId on.
// - A generator (tinyid-base generator/impl/CachedIdGenerator.java), one per biz_type in each
//   server (IdGeneratorFactoryServer) and in each client (tinyid-client, segments fetched
//   over HTTP from nextSegmentId): current and next segments; LOADING starts loading next in
//   the background, OVER makes next current (or loads one). A crashed process loses both.
// - Tokens (service/impl/TinyIdTokenServiceImpl.java): rows of tiny_id_token name a token and
//   the biz_type it may call.

export interface TinyidScenario {
  readonly types: readonly {
    readonly bizType: string;
    readonly maxId: number;
    readonly step: number;
    readonly delta: number;
    readonly remainder: number;
    readonly token: boolean;
  }[];
  /** Generators: server processes and clients, each its own cache. */
  readonly generators: number;
  readonly events: readonly TinyidEvent[];
}

export type TinyidEvent =
  | { readonly kind: 'next'; readonly gen: number; readonly type: number; readonly n: number }
  | { readonly kind: 'crash' | 'loadNext'; readonly gen: number }
  | { readonly kind: 'setStep'; readonly type: number; readonly step: number };

export interface TinyidOutcome {
  readonly info: readonly {
    readonly bizType: string;
    readonly maxId: number;
    readonly step: number;
    readonly delta: number;
    readonly remainder: number;
  }[];
  readonly tokens: readonly { readonly id: number; readonly token: string; readonly bizType: string }[];
  readonly issued: ReadonlyMap<string, readonly number[]>;
}

interface SegmentId {
  currentId: number;
  readonly maxId: number;
  readonly loadingId: number;
  readonly delta: number;
  readonly remainder: number;
  isInit: boolean;
}

interface Generator {
  current: SegmentId | null;
  next: SegmentId | null;
  loadingNext: boolean;
}

export function runTinyid(s: TinyidScenario): TinyidOutcome {
  const rows = new Map(
    s.types.map((t) => [
      t.bizType,
      { bizType: t.bizType, maxId: t.maxId, step: t.step, delta: t.delta, remainder: t.remainder },
    ]),
  );
  const issued = new Map<string, number[]>(s.types.map((t) => [t.bizType, []]));
  let gens: Map<string, Generator>[] = Array.from({ length: s.generators }, () => new Map());
  const segment = (bizType: string): SegmentId => {
    const row = rows.get(bizType)!;
    row.maxId += row.step;
    const currentId = row.maxId - row.step;
    return {
      currentId,
      maxId: row.maxId,
      loadingId: currentId + Math.floor((row.step * 20) / 100),
      delta: row.delta,
      remainder: row.remainder,
      isInit: false,
    };
  };
  const init = (sg: SegmentId) => {
    if (sg.isInit) return;
    if (sg.currentId % sg.delta === sg.remainder) {
      sg.isInit = true;
      return;
    }
    for (let i = 0; i <= sg.delta; i++) {
      const id = ++sg.currentId;
      if (id % sg.delta === sg.remainder) {
        sg.currentId -= sg.delta;
        sg.isInit = true;
        return;
      }
    }
  };
  const nextId = (g: Generator, bizType: string): number => {
    for (;;) {
      if (!g.current) g.current = segment(bizType);
      const sg = g.current;
      init(sg);
      sg.currentId += sg.delta;
      const id = sg.currentId;
      if (id > sg.maxId) {
        // loadCurrent: the next segment if one was loaded, else a new one.
        g.current = g.next ?? segment(bizType);
        g.next = null;
        continue;
      }
      if (id >= sg.loadingId && !g.next) g.loadingNext = true;
      return id;
    }
  };
  for (const e of s.events) {
    switch (e.kind) {
      case 'next': {
        const bizType = s.types[e.type % s.types.length].bizType;
        const cache = gens[e.gen % s.generators];
        let g = cache.get(bizType);
        if (!g) cache.set(bizType, (g = { current: null, next: null, loadingNext: false }));
        for (let i = 0; i < e.n; i++) issued.get(bizType)!.push(nextId(g, bizType));
        break;
      }
      case 'loadNext':
        for (const [bizType, g] of gens[e.gen % s.generators]) {
          if (g.loadingNext && !g.next) g.next = segment(bizType);
          g.loadingNext = false;
        }
        break;
      case 'crash':
        gens = gens.map((c, i) => (i === e.gen % s.generators ? new Map() : c));
        break;
      case 'setStep':
        rows.get(s.types[e.type % s.types.length].bizType)!.step = e.step;
        break;
    }
  }
  const tokens = s.types.flatMap((t, i) =>
    t.token ? [{ id: i + 1, token: `tok-${t.bizType}`, bizType: t.bizType }] : [],
  );
  return { info: [...rows.values()], tokens, issued };
}
