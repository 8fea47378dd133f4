// The Grafana dashboard (deploy/grafana/idmint.json) imports as it is: a dashboard model with
// schemaVersion and uid, a Prometheus data source variable every query uses (no data source
// uid of some other installation), unique panel ids, panels that do not overlap, and a query
// in every panel. Which metrics it names is checked against a real node in
// test/integration/metric-names.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: { expr: string; refId: string; datasource?: { uid: string } }[];
}
const dash = JSON.parse(readFileSync(new URL('../../deploy/grafana/idmint.json', import.meta.url), 'utf8')) as {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown }[] };
};

describe('Grafana dashboard', () => {
  it('is a dashboard model with a uid and schemaVersion', () => {
    assert.equal(typeof dash.uid, 'string');
    assert.equal(typeof dash.title, 'string');
    assert.ok(Number.isInteger(dash.schemaVersion) && dash.schemaVersion >= 36, String(dash.schemaVersion));
  });

  it('asks for the Prometheus data source, and every query uses it', () => {
    const ds = dash.templating.list.find((v) => v.type === 'datasource');
    assert.deepEqual([ds?.name, ds?.query], ['datasource', 'prometheus']);
    for (const p of dash.panels.filter((q) => q.type !== 'row')) {
      assert.deepEqual(p.datasource, { type: 'prometheus', uid: '${datasource}' }, p.title);
      assert.ok(p.targets && p.targets.length > 0, `${p.title}: no query`);
      for (const t of p.targets) {
        assert.ok(t.expr.trim() !== '' && t.refId, p.title);
        assert.equal(t.datasource?.uid, '${datasource}', p.title);
      }
    }
  });

  it('has unique panel ids and panels that do not overlap on the 24-column grid', () => {
    const ids = dash.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
    const cells = new Set<string>();
    for (const p of dash.panels) {
      const g = p.gridPos;
      assert.ok(g.x >= 0 && g.x + g.w <= 24, p.title);
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          const k = `${x},${y}`;
          assert.ok(!cells.has(k), `${p.title} overlaps another panel at ${k}`);
          cells.add(k);
        }
      }
    }
  });
});
