// The stream's frame pool (src/api/ws/frame-pool.ts): a frame given back serves the next frame
// of its size, a frame of another size is new memory, at most two frames are kept, and a
// cleared pool keeps none.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FramePool } from '../../src/api/ws/frame-pool.js';

describe('frame pool', () => {
  it('gives a written frame again for a frame of its size, and new memory for another size', () => {
    const pool = new FramePool();
    const first = pool.take(808);
    assert.equal(first.length, 808);
    assert.equal(first.byteOffset, 0);
    assert.equal(pool.take(808) === first, false, 'a frame not given back is never given twice');
    pool.give(first);
    const other = pool.take(16);
    assert.notEqual(other, first);
    assert.equal(pool.take(808), first);
    assert.equal(pool.size, 0);
  });

  it('keeps at most two frames, the latest given', () => {
    const pool = new FramePool();
    const frames = [pool.take(24), pool.take(24), pool.take(24)];
    for (const frame of frames) pool.give(frame);
    assert.equal(pool.size, 2);
    assert.deepEqual(new Set([pool.take(24), pool.take(24)]), new Set(frames.slice(1)));
  });

  it('keeps nothing once cleared', () => {
    const pool = new FramePool();
    const frame = pool.take(24);
    pool.give(frame);
    pool.clear();
    assert.equal(pool.size, 0);
    assert.notEqual(pool.take(24), frame);
  });
});
