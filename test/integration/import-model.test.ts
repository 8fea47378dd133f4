// suite: single — it checks what the importer plans from the old systems' stores (scratch MySQL databases filled from the models in test/models) and the first IDs idmint then hands out; the Redis topology plays no part, so a second run on a Cluster would only repeat it
// A few scenarios of each old system's model (test/models) through the real importer: the
// model runs up to a minute before now, what it leaves is written into a scratch database of
// the old system's published schema (and, for id_server, sent as config.json, Lua files and
// log lines), the admin route imports it into a running idmint, and the first IDs idmint hands
// out (HTTP, and UDP for rules) must differ from every ID the model handed out. A refused
// import is a safe outcome. The fuzzing itself, thousands of scenarios against the pure
// planners, is test/models/*.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../../tools/child.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, startLocalNode } from '../../tools/node.js';
import { dropDb, ID_SERVER_DDL, LEAF_DDL, oldDb, TINYID_DDL } from '../../tools/old-systems.js';
import { rng } from '../../tools/prng.js';
import { UdpClient } from '../../tools/udp-client.js';
import { runIdServer, type IdServerEvent, type IdServerScenario } from '../models/id-server-model.js';
import { LEAF_TWEPOCH, runLeafSegment, runLeafSnowflake, type LeafSegmentEvent } from '../models/leaf-model.js';
import { runTinyid, type TinyidEvent } from '../models/tinyid-model.js';

type Json = Record<string, unknown>;

async function importVia(url: string, body: Json): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}/v1/admin/import`, {
    method: 'POST',
    headers: adminHeaders,
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

/**
 * Up to n IDs of a tag over HTTP, in requests of up to 50 and then one at a time once a request
 * finds too few left: none past the point where idmint answers that the period is used up.
 */
async function take(
  url: string,
  tag: string,
  n: number,
  query = '',
  headers: Record<string, string> = {},
): Promise<string[]> {
  const out: string[] = [];
  let batch = Math.min(50, n);
  while (out.length < n) {
    const res = await fetch(`${url}/v1/ids/${tag}?count=${Math.min(batch, n - out.length)}${query}`, { headers });
    const b = (await res.json()) as { ids?: string[]; error?: { code: string } };
    if (b.error?.code === 'ID_SPACE_EXHAUSTED') {
      if (batch === 1) break;
      batch = 1;
      continue;
    }
    assert.equal(res.status, 200, `${tag}${query}: ${JSON.stringify(b)}`);
    out.push(...b.ids!);
  }
  return out;
}

function assertNoneOld(fresh: readonly string[], old: ReadonlySet<string>, what: string): void {
  const again = fresh.filter((id) => old.has(id));
  assert.deepEqual(again, [], `${what}: idmint handed out IDs the old system handed out`);
}

/** A model scenario moved so that it ends (its import instant) `lead` ms before now. */
function endingNow<T extends { startMs: number }>(s: T, importOf: (s: T) => number, lead = 60_000): T {
  const span = importOf({ ...s, startMs: Date.UTC(2026, 0, 1) }) - Date.UTC(2026, 0, 1);
  return { ...s, startMs: Date.now() - span - lead };
}

const RULE = (prefix: string) => ({ order: `${prefix}order`, orderId: `${prefix}order_id`, task: `${prefix}task` });

/**
 * id_server scenarios: zones with and without DST, a shared counter key, a wrap seen in a debug log, several nodes,
 * crashes.
 */
function idServerScenarios(): { s: IdServerScenario; zoneGiven: string; log: boolean }[] {
  const r = rng(3801);
  const req = (dt: number, node: number, rule: number, app: number): IdServerEvent => ({
    dt,
    kind: 'req',
    node,
    rule,
    app,
  });
  const busy = (n: number, rules: number, apps: number, nodes: number): IdServerEvent[] =>
    Array.from({ length: n }, () =>
      req(r.pick([0, 1, 5, 30, 600]), r.int(0, nodes - 1), r.int(0, rules - 1), r.int(0, apps - 1)),
    );
  const a = RULE('ma');
  const b = RULE('mb');
  const c = RULE('mc');
  const daily = (name: string, max: number, batchSave: number | undefined) => ({
    name,
    min: 0,
    max,
    reset: 86_400,
    format: `O%02d%02d%02d%0${String(max).length}d`,
    args: ['now:year()%100', 'now:month()', 'now:day()', 'seq'],
    batchSave,
  });
  return [
    {
      // Shanghai, two nodes, rules whose keys meet ("maorder" + "_id_shop" = "maorder_id" + "_shop"), a crash.
      s: {
        zone: 'Asia/Shanghai',
        startMs: 0,
        idStep: 2,
        offsets: [0, 1],
        rules: [daily(a.order, 9999, 5), daily(a.orderId, 9999, 5)],
        apps: ['id_shop', 'shop'],
        logLevel: 2,
        ndebug: true,
        events: [...busy(30, 2, 2, 2), { dt: 2, kind: 'crash', node: 1 }, ...busy(20, 2, 2, 1)],
        endCrash: [true, false],
        importDelay: 0,
      },
      zoneGiven: 'Asia/Shanghai',
      log: false,
    },
    {
      // New York (DST), a small max_counter that wraps, a debug build's debug log handed over.
      s: {
        zone: 'America/New_York',
        startMs: 0,
        idStep: 1,
        offsets: [0],
        rules: [daily(b.task, 30, 2)],
        apps: ['shop'],
        logLevel: 5,
        ndebug: false,
        events: busy(45, 1, 1, 1),
        endCrash: [true],
        importDelay: 0,
      },
      zoneGiven: 'America/New_York',
      log: true,
    },
    {
      // UTC-12, an hourly rule, the database away for a while (its failures only in the log).
      s: {
        zone: 'Etc/GMT+12',
        startMs: 0,
        idStep: 1,
        offsets: [0],
        rules: [
          {
            name: c.task,
            min: 1,
            max: 999,
            reset: 3600,
            format: 'T%02d%02d%02d%02d%03d',
            args: ['now:year()%100', 'now:month()', 'now:day()', 'now:hour()', 'seq'],
            batchSave: 10,
          },
        ],
        apps: ['app', 'test'],
        logLevel: 3,
        ndebug: true,
        events: [
          ...busy(15, 1, 2, 1),
          { dt: 1, kind: 'dbDown' },
          ...busy(15, 1, 2, 1),
          { dt: 1, kind: 'dbUp' },
          ...busy(5, 1, 2, 1),
        ],
        endCrash: [false],
        importDelay: 0,
      },
      zoneGiven: 'Etc/GMT+12',
      log: true,
    },
  ];
}

describe('imports of model scenarios against a running idmint', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>> & { udpPort: number };
  const dbs: string[] = [];

  before(async () => {
    const udpPort = await freePort();
    node = Object.assign(await startLocalNode(names, { UDP_PORT: String(udpPort) }), { udpPort });
  });
  after(async () => {
    await node?.close();
    for (const db of dbs) await dropDb(db);
    await cleanup(names);
  });

  it('id_server: the first rule IDs idmint hands out (HTTP and UDP) are none of the model', async () => {
    const udp = await UdpClient.open();
    try {
      for (const [i, x] of idServerScenarios().entries()) {
        const s = endingNow(x.s, (y) => runIdServer(y).importMs);
        const out = runIdServer(s);
        const db = `${names.db}_ids${i}`;
        dbs.push(db);
        const old = await oldDb(db, [ID_SERVER_DDL]);
        try {
          for (const row of out.rows)
            await old.c.query(
              'INSERT INTO counter (node_offset, counter, update_time, rule_name, app_name) VALUES (?, ?, ?, ?, ?)',
              [row.nodeOffset, row.counter, row.updateTime, row.ruleName, row.appName],
            );
        } finally {
          await old.c.end();
        }
        const log = x.log
          ? out.logs
              .flatMap((l) => l.text.split('\n'))
              .filter((l) => l.includes('replace into counter'))
              .join('\n')
          : undefined;
        const body = {
          system: 'id_server',
          mysql: old.url,
          time_zone: x.zoneGiven,
          config_json: out.configs[0],
          lua_files: out.lua,
          ...(log ? { idserver_log: log } : {}),
        };
        let r = await importVia(node.url, body);
        // A log line that would close a period refuses the import until the operator has
        // checked it: these are id_server's own, so the operator imports again trusting them.
        if (r.status === 400 && /--trust-log/.test(JSON.stringify(r.body)))
          r = await importVia(node.url, { ...body, trust_log: true });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        for (const rule of s.rules) {
          for (const app of s.apps) {
            const old = new Set(out.issued.filter((o) => o.rule === rule.name && o.app === app).map((o) => o.id));
            assertNoneOld(
              await take(node.url, rule.name, 40, `&app=${app}`),
              old,
              `scenario ${i} ${rule.name}/${app} (HTTP)`,
            );
            for (let k = 0; k < 3; k++) {
              const a = await udp.request(node.udpPort, {
                action: 'get',
                rule_name: rule.name,
                app_name: app,
                seq: `${i}-${k}`,
              });
              if (a.code !== 0) break;
              assertNoneOld([String(a.data)], old, `scenario ${i} ${rule.name}/${app} (UDP)`);
            }
          }
        }
      }
    } finally {
      udp.close();
    }
  });

  it('Leaf (segment mode): the first IDs idmint hands out are none of the model', async () => {
    for (let i = 0; i < 3; i++) {
      const r = rng(3810 + i);
      const tags = [
        { tag: `mleaf${i}a`, maxId: r.int(1, 5_000), step: r.pick([1, 10, 100]) },
        { tag: `mleaf${i}b`, maxId: r.int(1, 1_000_000), step: r.pick([2, 1000]) },
      ];
      const events: LeafSegmentEvent[] = Array.from({ length: 25 }, () =>
        r.pick<LeafSegmentEvent>([
          { dt: r.int(0, 60_000), kind: 'get', server: r.int(0, 2), tag: r.int(0, 1), n: r.int(1, 30) },
          { dt: r.int(0, 60_000), kind: 'get', server: r.int(0, 2), tag: r.int(0, 1), n: r.int(1, 30) },
          { dt: r.int(0, 60_000), kind: 'load', server: r.int(0, 2) },
          { dt: r.int(0, 60_000), kind: 'crash', server: r.int(0, 2) },
          { dt: 0, kind: 'setStep', tag: r.int(0, 1), step: r.pick([3, 50]) },
        ]),
      );
      const out = runLeafSegment({ tags, servers: 3, startMs: Date.now() - 3_600_000, events });
      const db = `${names.db}_leaf${i}`;
      dbs.push(db);
      const old = await oldDb(db, [LEAF_DDL]);
      try {
        for (const row of out.rows)
          await old.c.query('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)', [
            row.tag,
            row.maxId,
            row.step,
            'model',
          ]);
      } finally {
        await old.c.end();
      }
      const res = await importVia(node.url, { system: 'leaf', mysql: old.url });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      for (const t of tags)
        assertNoneOld(
          await take(node.url, t.tag, 200),
          new Set((out.issued.get(t.tag) ?? []).map(String)),
          `Leaf ${t.tag}`,
        );
    }
  });

  it('Tinyid: the first IDs idmint hands out (with the Tinyid tokens) are none of the model, delta and remainder kept', async () => {
    for (let i = 0; i < 3; i++) {
      const r = rng(3820 + i);
      const types = [0, 1].map((k) => {
        const delta = r.int(1, 4);
        return {
          bizType: `mtiny${i}${k}`,
          maxId: r.int(0, 100_000),
          step: r.pick([1, 10, 100, 1000]),
          delta,
          remainder: r.int(0, delta - 1),
          token: true,
        };
      });
      const events: TinyidEvent[] = Array.from({ length: 25 }, () =>
        r.pick<TinyidEvent>([
          { kind: 'next', gen: r.int(0, 3), type: r.int(0, 1), n: r.int(1, 30) },
          { kind: 'next', gen: r.int(0, 3), type: r.int(0, 1), n: r.int(1, 30) },
          { kind: 'loadNext', gen: r.int(0, 3) },
          { kind: 'crash', gen: r.int(0, 3) },
          { kind: 'setStep', type: r.int(0, 1), step: r.pick([3, 50]) },
        ]),
      );
      const out = runTinyid({ types, generators: 4, events });
      const db = `${names.db}_tiny${i}`;
      dbs.push(db);
      const old = await oldDb(db, TINYID_DDL);
      try {
        for (const row of out.info)
          await old.c.query(
            'INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES (?, 0, ?, ?, ?, ?, 1)',
            [row.bizType, row.maxId, row.step, row.delta, row.remainder],
          );
        for (const t of out.tokens)
          await old.c.query("INSERT INTO tiny_id_token (token, biz_type, remark) VALUES (?, ?, 'model')", [
            t.token,
            t.bizType,
          ]);
      } finally {
        await old.c.end();
      }
      const res = await importVia(node.url, { system: 'tinyid', mysql: old.url });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      for (const t of out.info) {
        const token = out.tokens.find((k) => k.bizType === t.bizType)!.token;
        const fresh = await take(node.url, t.bizType, 200, '', { 'x-idmint-token': token });
        assertNoneOld(fresh, new Set((out.issued.get(t.bizType) ?? []).map(String)), `Tinyid ${t.bizType}`);
        for (const id of fresh)
          assert.equal(
            BigInt(id) % BigInt(t.delta),
            BigInt(t.remainder),
            `Tinyid ${t.bizType}: ${id} keeps remainder ${t.remainder} of delta ${t.delta}`,
          );
      }
    }
  });

  it("Leaf (snowflake mode): the first IDs of the imported tag are none of Leaf's, over /v1/ids and Leaf's route", async () => {
    for (let i = 0; i < 2; i++) {
      const r = rng(3830 + i);
      const twepoch = i === 0 ? LEAF_TWEPOCH : Date.UTC(2015, 5, 1);
      const out = runLeafSnowflake({
        twepoch,
        workers: [0, r.int(1, 1023)],
        startMs: Date.now() - 600_000,
        events: Array.from({ length: 12 }, () => ({
          dt: r.int(0, 40_000),
          kind: 'get' as const,
          node: r.int(0, 1),
          n: r.int(1, 200),
        })),
        draws: Array.from({ length: 8 }, () => r.int(0, 99)),
        importDelay: 0,
      });
      const tag = `mleafsf${i}`;
      const res = await importVia(node.url, {
        system: 'leaf-snowflake',
        tag,
        ...(twepoch === LEAF_TWEPOCH ? {} : { twepoch }),
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const old = new Set(out.issued.map(String));
      assertNoneOld(await take(node.url, tag, 500), old, `Leaf snowflake ${tag}`);
      const leafRoute = await fetch(`${node.url}/api/snowflake/get/${tag}`);
      assert.equal(leafRoute.status, 200);
      const text = (await leafRoute.text()).trim();
      assertNoneOld([text], old, `Leaf snowflake ${tag} (Leaf's route)`);
      assert.ok(BigInt(text) > out.issued.reduce((a, b) => (a > b ? a : b), 0n), `${text} lies above Leaf's IDs`);
    }
  });
});
