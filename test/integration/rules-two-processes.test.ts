// suite: cluster
// Rule tags (the id_server model) end to end against real Redis and MySQL, on two processes:
// - the id_server example rule `{year%10}{MM}{dd}{counter:4}` served by two idmint processes
//   over HTTP and UDP at once, for `order: global` and `order: node`: 9-digit IDs, today's
//   date in the rule's zone, counters increasing per client, no ID twice;
// - editing a running rule's template through the admin API (disjoint templates only).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, spawnNode, type ChildNode } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';
import { UdpClient } from '../../tools/udp-client.js';
import { assertIncreasing } from '../../tools/order.js';
import { waitFor } from '../helpers/fault-load.js';
import { httpIds, type Json, mustHttpId, patchTag, udpId, yMd } from '../helpers/rule-requests.js';

describe('the id_server example rule on two processes, over HTTP and UDP', () => {
  const names = testNames();
  const nodes: { child: ChildNode; udpPort: number }[] = [];
  const RULES = [
    { tag: 'o2o', order: 'global', zone: 'Asia/Shanghai' },
    { tag: 'o2on', order: 'node', zone: 'America/Los_Angeles' },
  ] as const;

  before(async () => {
    for (let i = 0; i < 2; i++) {
      const udpPort = await freePort();
      const child = await spawnNode(names, { UDP_PORT: String(udpPort), NODE_OFFSET: String(i + 1) });
      nodes.push({ child, udpPort });
    }
    for (const r of RULES) {
      const made = await createTag(nodes[0].child.url, {
        tag: r.tag,
        mode: 'rule',
        order: r.order,
        template: '{year%10}{MM}{dd}{counter:4}',
        min_counter: 0,
        max_counter: 9999,
        reset_seconds: 86400,
        time_zone: r.zone,
        step: 100,
        min_step: 50,
        max_step: 400,
        ...(r.order === 'node' ? { node_block: 40 } : {}),
      });
      assert.equal(made.template, '{year%10}{MM}{dd}{counter:4}');
      assert.equal(made.time_zone, r.zone);
    }
  });

  after(async () => {
    for (const n of nodes) await n.child.stop().catch(() => undefined);
    await cleanup(names);
  });

  for (const rule of RULES) {
    it(`order ${rule.order}: 9-digit IDs of today in ${rule.zone}, increasing per client, unique across processes`, {
      timeout: 40000,
    }, async () => {
      const clients: { name: string; ids: string[] }[] = [];
      const sockets: UdpClient[] = [];
      const t0 = Date.now();
      const work: Promise<void>[] = [];
      nodes.forEach((n, ni) => {
        const url = n.child.url;
        for (let w = 0; w < 6; w++) {
          const c = { name: `http-${ni}-${w}`, ids: [] as string[] };
          clients.push(c);
          work.push(
            (async () => {
              for (let k = 0; k < 40; k++) c.ids.push(await mustHttpId(url, rule.tag, 'test'));
            })(),
          );
        }
        const batch = { name: `batch-${ni}`, ids: [] as string[] };
        clients.push(batch);
        work.push(
          (async () => {
            for (let k = 0; k < 8; k++) {
              const ids = await httpIds(url, rule.tag, 'test', 25);
              assertIncreasing(ids, `a batch from node ${ni}`);
              batch.ids.push(...ids);
            }
          })(),
        );
        for (let w = 0; w < 6; w++) {
          const c = { name: `udp-${ni}-${w}`, ids: [] as string[] };
          clients.push(c);
          work.push(
            (async () => {
              const s = await UdpClient.open();
              sockets.push(s);
              for (let k = 0; k < 40; k++)
                c.ids.push(await udpId(s, n.udpPort, rule.tag, 'test', k % 3 === 2 ? 'create' : 'get'));
            })(),
          );
        }
      });
      try {
        await Promise.all(work);
      } finally {
        for (const s of sockets) s.close();
      }
      const t1 = Date.now();
      const days = new Set([yMd(t0, rule.zone), yMd(t1, rule.zone)]);

      const all = clients.flatMap((c) => c.ids);
      assert.equal(all.length, 2 * (6 * 40 + 8 * 25 + 6 * 40));
      for (const id of all) {
        assert.match(id, /^\d{9}$/);
        assert.ok(
          days.has(id.slice(0, 5)),
          `${id} does not start with today's date in ${rule.zone} (${[...days].join(' or ')})`,
        );
      }
      assert.equal(new Set(all).size, all.length, 'an ID was answered twice');
      for (const c of clients) assertIncreasing(c.ids, `${rule.tag} client ${c.name}`);
      const counters = all.map((id) => Number(id.slice(5))).sort((a, b) => a - b);
      if (days.size === 1) {
        // A fresh rule: the day's first counter is min_counter.
        assert.equal(counters[0], 0);
        if (rule.order === 'global') {
          // One shared counter: nothing is held back in process memory, so the run has no
          // holes beyond a segment wasted by a retried refill.
          assert.ok(
            counters[counters.length - 1] < all.length + 400,
            `counters reach ${counters[counters.length - 1]} for ${all.length} IDs`,
          );
        }
      }
    });
  }

  it('order global follows real time across processes and protocols', async () => {
    const s = await UdpClient.open();
    try {
      const ids: string[] = [];
      for (let k = 0; k < 40; k++) {
        const n = nodes[k % 2];
        ids.push(k % 4 < 2 ? await mustHttpId(n.child.url, 'o2o', 'test') : await udpId(s, n.udpPort, 'o2o', 'test'));
      }
      assertIncreasing(ids, 'alternating between processes');
      // Another app name has its own run of counters, from min_counter.
      const other = await udpId(s, nodes[1].udpPort, 'o2o', 'other');
      assert.equal(other.slice(5), '0000');
      assert.equal(await mustHttpId(nodes[0].child.url, 'o2o', 'other'), `${other.slice(0, 5)}0001`);
    } finally {
      s.close();
    }
  });

  it('a template change reaches both processes; only disjoint templates are accepted; an earlier template may return', {
    timeout: 30000,
  }, async () => {
    const [a, b] = nodes;
    const T0 = '{year%10}{MM}{dd}{counter:4}';
    await createTag(a.child.url, {
      tag: 'edit',
      mode: 'rule',
      template: T0,
      min_counter: 0,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
    const s = await UdpClient.open();
    const seen: string[] = [];
    const counterOf = (id: string) => Number(id.slice(-4));
    const take = async (n: (typeof nodes)[number], via: 'http' | 'udp') => {
      const id =
        via === 'http' ? await mustHttpId(n.child.url, 'edit', 'test') : await udpId(s, n.udpPort, 'edit', 'test');
      seen.push(id);
      return id;
    };
    /** Polls process n until its IDs match re, for 3 s at most; returns how long that took. */
    const servesWithin = async (n: (typeof nodes)[number], re: RegExp): Promise<number> => {
      const start = Date.now();
      await waitFor(
        `process at ${n.child.url} to serve IDs like ${re}`,
        async () => re.test(await take(n, 'http')),
        3000,
        25,
      );
      return Date.now() - start;
    };
    try {
      const nine = /^\d{9}$/;
      assert.match(await take(a, 'http'), nine);
      assert.match(await take(b, 'udp'), nine);

      // A literal prefix: disjoint (another length). The changing process serves it at once.
      const T1 = 'A{year%10}{MM}{dd}{counter:4}';
      let r = await patchTag(a.child.url, 'edit', { template: T1 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.template, T1);
      const withA = /^A\d{9}$/;
      assert.match(await take(a, 'http'), withA);
      assert.match(await take(a, 'udp'), withA);
      const lag = await servesWithin(b, withA);
      assert.ok(lag <= 1000, `the other process took ${lag} ms to serve the new template`);
      assert.match(await take(b, 'udp'), withA);

      // Templates that could render what an earlier template rendered are refused, and the
      // running template stays.
      for (const [t, clash] of [
        ['{MM}{dd}{year%10}{counter:4}', T0], // 9 digits, like the first template (not the current one)
        ['{year%10}{dd}{MM}{counter:4}', T0],
        ['A{year%10}{dd}{MM}{counter:4}', T1], // same shape as the current template
      ]) {
        r = await patchTag(a.child.url, 'edit', { template: t });
        assert.equal(r.status, 400, `${t} was accepted: ${JSON.stringify(r.body)}`);
        const err = r.body.error as { code: string; message: string };
        assert.equal(err.code, 'INVALID_ARGUMENT');
        assert.ok(err.message.includes(`"${clash}"`), `${t}: ${err.message}`);
      }
      for (const [field, value] of [
        ['min_counter', 1],
        ['reset_seconds', 3600],
        ['time_zone', 'Asia/Tokyo'],
        ['max_counter', 9000],
      ] as const) {
        r = await patchTag(a.child.url, 'edit', { [field]: value });
        assert.equal(r.status, 400, `${field} ${value} was accepted`);
      }
      const show = (await (await fetch(`${a.child.url}/v1/admin/tags/edit`, { headers: adminHeaders })).json()) as Json;
      assert.equal(show.template, T1);
      assert.match(await take(b, 'http'), withA);
      assert.match(await take(a, 'udp'), withA);

      // Another disjoint template, then back to the first one: allowed, and served everywhere.
      const T2 = 'B-{yyyy}{MM}{dd}-{counter:4}';
      r = await patchTag(b.child.url, 'edit', { template: T2 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const withB = /^B-\d{8}-\d{4}$/;
      assert.match(await take(b, 'udp'), withB);
      const lagB = await servesWithin(a, withB);
      assert.ok(lagB <= 1000, `the other process took ${lagB} ms to serve the new template`);
      r = await patchTag(a.child.url, 'edit', { template: T0 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.match(await take(a, 'udp'), nine);
      const lag0 = await servesWithin(b, nine);
      assert.ok(lag0 <= 1000, `the other process took ${lag0} ms to serve the earlier template again`);
      assert.match(await take(b, 'udp'), nine);

      // One counter per (rule, app, day) whatever the template: it never went back.
      const counters = seen.map(counterOf);
      for (let i = 1; i < counters.length; i++)
        assert.ok(
          counters[i] > counters[i - 1],
          `counter ${counters[i]} after ${counters[i - 1]} (${seen[i - 1]} then ${seen[i]})`,
        );
      assert.ok(seen.length >= 13, `only ${seen.length} IDs taken`);
    } finally {
      s.close();
    }
  });
});
