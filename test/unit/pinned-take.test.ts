import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RUN_ID_READ, pinnedTakeText } from '../../src/store/redis/pinned-take.js';
import { scriptText } from '../../src/store/redis/lua.js';

describe('pinnedTakeText', () => {
  const lua = scriptText('take-2');
  const runId = 'a'.repeat(39) + 'b';

  it('replaces the one INFO server read of the take script with the run id', () => {
    const text = pinnedTakeText(lua, runId);
    assert.ok(lua.includes(RUN_ID_READ));
    assert.ok(!text.includes("redis.call('INFO'"), 'the copy reads no INFO');
    assert.ok(text.includes(`local function serverRunId()\n  return '${runId}'\nend`), 'the run id read (includes/server-run-id.lua) answers the constant');
    assert.ok(text.includes('local rid = serverRunId()'));
    assert.equal(text.length, lua.length - RUN_ID_READ.length + runId.length + 2);
  });

  it('refuses anything but a run id, and a script without exactly one read', () => {
    for (const bad of ['', 'abc', `${runId}'`, runId.toUpperCase(), `${runId}0`]) assert.throws(() => pinnedTakeText(lua, bad), /not a Redis run id/);
    assert.throws(() => pinnedTakeText('return 1', runId), /exactly once/);
    assert.throws(() => pinnedTakeText(`${lua}\n${RUN_ID_READ}`, runId), /exactly once/);
  });
});
