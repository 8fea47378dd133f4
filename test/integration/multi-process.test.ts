// suite: cluster
// Two `idmint serve` processes on one Redis and one MySQL under concurrent load: IDs are
// unique across processes; a global-order tag follows real time across both; a node-order
// tag increases per process; and once warm, refills arrive before they are needed (no
// request waits for MySQL).
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames } from '../../tools/env.js';
import {
  duplicates,
  isAnswer,
  realTimeOrder,
  strictlyIncreasing,
  timedTake,
  type Answer,
  type Failure,
} from '../helpers/load.js';
import { logLines } from '../../tools/child.js';
import { createTag, spawnNode, type ChildNode } from '../../tools/node.js';
import { rng, SEED } from '../../tools/prng.js';

const CLIENTS = 8;
const LOAD_MS = 7000;
// Steps grow from 200 with the measured rate; on a slow or busy machine that takes a second or two.
const WARM_MS = 2000;
const GLOBAL = 'mp_global';
const NODE = 'mp_node';
// Small segments that should last about a second each: several refills happen during the run.
const SEGMENT = { step: 200, min_step: 100, max_step: 1_000_000, target_seconds: 1 };

describe('two processes under concurrent load', () => {
  const names = testNames();
  const nodes: ChildNode[] = [];
  const answers: Answer[] = [];
  const failures: Failure[] = [];
  let loadStartWall = 0;
  let loadEndWall = 0;

  before(async () => {
    nodes.push(...(await Promise.all([spawnNode(names, { NODE_ID: 'mp-a' }), spawnNode(names, { NODE_ID: 'mp-b' })])));
    await createTag(nodes[0].url, { tag: GLOBAL, ...SEGMENT });
    await createTag(nodes[1].url, { tag: NODE, order: 'node', node_block: 100, ...SEGMENT });

    const end = performance.now() + LOAD_MS;
    loadStartWall = Date.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        const r = rng(SEED + client);
        const node = client % nodes.length;
        while (performance.now() < end) {
          const tag = r.next() < 0.5 ? GLOBAL : NODE;
          const single = r.next() < 0.5;
          const res = await timedTake(nodes[node].url, { client, node }, tag, single ? 1 : r.int(1, 50), single);
          if (isAnswer(res)) answers.push(res);
          else failures.push(res);
        }
      }),
    );
    loadEndWall = Date.now();
  });

  after(async () => {
    const codes = await Promise.all(nodes.map((n) => n.stop()));
    await cleanup(names);
    assert.deepEqual(
      codes,
      nodes.map(() => 0),
      'both processes exit cleanly',
    );
  });

  it('answers every request', (t) => {
    const ids = answers.reduce((n, a) => n + a.ids.length, 0);
    t.diagnostic(
      `${answers.length} requests answered, ${ids} IDs, in ${loadEndWall - loadStartWall} ms; batch sizes of seed ${SEED} (SEED=${SEED} replays them)`,
    );
    assert.deepEqual(failures.slice(0, 5), [], `${failures.length} requests failed`);
    assert.ok(answers.length > 500, `only ${answers.length} requests were answered in ${LOAD_MS} ms`);
    for (const n of [0, 1])
      for (const tag of [GLOBAL, NODE]) {
        assert.ok(
          answers.filter((a) => a.node === n && a.tag === tag).length > 100,
          `node ${n} served few requests of ${tag}`,
        );
      }
  });

  it('never hands out an ID twice, across both processes', () => {
    for (const tag of [GLOBAL, NODE]) {
      const { total, repeated } = duplicates(answers.filter((a) => a.tag === tag));
      assert.ok(total > 3000, `${tag}: only ${total} IDs checked`);
      assert.deepEqual(repeated.slice(0, 10), [], `${tag}: ${repeated.length} of ${total} IDs repeated`);
    }
  });

  it('global order: each client sees strictly increasing IDs', () => {
    let checked = 0;
    for (let client = 0; client < CLIENTS; client++) {
      const mine = answers.filter((a) => a.tag === GLOBAL && a.client === client).sort((a, b) => a.sent - b.sent);
      const r = strictlyIncreasing(mine);
      assert.deepEqual(r.violations.slice(0, 5), [], `client ${client}: ${r.violations.length} IDs out of order`);
      checked += r.checked;
    }
    assert.ok(checked > 3000, `only ${checked} successive IDs compared`);
  });

  it('global order: an ID answered after another answer arrived is larger, whichever process served either', () => {
    const global = answers.filter((a) => a.tag === GLOBAL);
    const r = realTimeOrder(global);
    assert.deepEqual(
      r.violations.slice(0, 5),
      [],
      `${r.violations.length} of ${r.checked} requests broke real-time order`,
    );
    assert.ok(r.checked > global.length * 0.9, `only ${r.checked} of ${global.length} requests were compared`);
    // The two processes really share one sequence: their IDs interleave.
    const sorted = global
      .flatMap((a) => a.ids.map((id) => [id, a.node] as const))
      .sort((x, y) => (x[0] < y[0] ? -1 : 1));
    let switches = 0;
    for (let i = 1; i < sorted.length; i++) if (sorted[i][1] !== sorted[i - 1][1]) switches++;
    assert.ok(switches > 100, `the processes' IDs interleave only ${switches} times`);
  });

  it('node order: each process hands out increasing IDs', () => {
    for (const node of [0, 1]) {
      const served = answers.filter((a) => a.tag === NODE && a.node === node);
      const rt = realTimeOrder(served);
      assert.deepEqual(
        rt.violations.slice(0, 5),
        [],
        `node ${node}: ${rt.violations.length} of ${rt.checked} requests went backwards`,
      );
      assert.ok(rt.checked > 100, `node ${node}: only ${rt.checked} requests compared`);
      for (let client = node; client < CLIENTS; client += nodes.length) {
        const r = strictlyIncreasing(served.filter((a) => a.client === client).sort((a, b) => a.sent - b.sent));
        assert.deepEqual(r.violations.slice(0, 5), [], `client ${client}: ${r.violations.length} IDs out of order`);
        assert.ok(r.checked > 300, `client ${client}: only ${r.checked} IDs compared`);
      }
    }
  });

  it('after warm-up, refills are prefetched: no request waits for MySQL', (t) => {
    // The refill worker logs {"msg":"segment allocated","tag","step","installed","urgent",...}.
    interface Refill {
      msg?: string;
      tag?: string;
      time: number;
      step?: number;
      installed?: string;
      urgent?: unknown;
      from: number;
    }
    const refills = nodes
      .flatMap((n, node) => logLines(n.output).map((l) => ({ ...l, from: node }) as Refill))
      .filter((l) => l.msg === 'segment allocated');
    for (const l of refills) assert.equal(typeof l.urgent, 'boolean', JSON.stringify(l));
    const warm = refills.filter((l) => l.time >= loadStartWall + WARM_MS && l.time <= loadEndWall);
    const summary = refills
      .map(
        (l) =>
          `${l.tag} +${l.time - loadStartWall}ms step ${l.step} ${l.installed}${l.urgent ? ' URGENT' : ''} (node ${l.from})`,
      )
      .join('\n');
    t.diagnostic(
      `refills: ${refills.length} in all, ${warm.length} after warm-up, ${refills.filter((l) => l.urgent).length} urgent in all`,
    );
    if (process.env.SHOW_REFILLS) t.diagnostic(summary);
    const urgent = warm.filter((l) => l.urgent);
    assert.deepEqual(
      urgent.map((l) => `${l.tag} +${l.time - loadStartWall}ms`),
      [],
      `urgent refills after warm-up:\n${summary}`,
    );
    // A prefetch that arrives after its tag ran dry is installed as the current segment
    // (requests waited for it even though the urgent request was folded into that job).
    const late = warm.filter((l) => l.installed === 'current');
    assert.deepEqual(
      late.map((l) => `${l.tag} +${l.time - loadStartWall}ms`),
      [],
      `refills that arrived after the tag ran dry:\n${summary}`,
    );
    for (const tag of [GLOBAL, NODE]) {
      const prefetched = warm.filter((l) => l.tag === tag && l.urgent === false && l.installed === 'next');
      assert.ok(
        prefetched.length >= 3,
        `${tag}: only ${prefetched.length} prefetch refills after warm-up:\n${summary}`,
      );
    }
  });
});
