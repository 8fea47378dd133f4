import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { servingThreads, threadTimes, type ThreadTimes } from '../../tools/threads.js';

test('servingThreads: the serving thread (tid = pid) counts its wait, every other thread its CPU, a new thread from zero', () => {
  const t = (runS: number, waitS: number): ThreadTimes => ({ runS, waitS });
  const before = new Map([
    [
      10,
      new Map([
        [10, t(5, 1)],
        [11, t(2, 9)],
      ]),
    ],
  ]);
  const after = new Map([
    [
      10,
      new Map([
        [10, t(7, 1.25)],
        [11, t(2.5, 20)],
        [12, t(0.125, 3)],
      ]),
    ],
    [20, new Map([[20, t(1, 0.5)]])],
  ]);
  assert.deepEqual(servingThreads(before, after), { servingWaitS: 0.25 + 0.5, othersRunS: 0.5 + 0.125 });
});

test('threadTimes reads each thread of a process: a serving thread that shares its CPU with a busy thread of its own waits for it', async () => {
  // One CPU, two threads that never sleep: each runs while the other waits.
  const child = spawn(
    'taskset',
    [
      '-c',
      '0',
      process.execPath,
      '-e',
      `const { Worker } = require('node:worker_threads');
       new Worker('for (;;);', { eval: true }).on('online', () => {
         console.log('ready');
         const end = Date.now() + 1000;
         while (Date.now() < end);
         console.log('done');
         setInterval(() => {}, 1000);
       });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const lines = (async function* () {
      let buf = '';
      for await (const chunk of child.stdout) {
        buf += String(chunk);
        for (let at = buf.indexOf('\n'); at >= 0; at = buf.indexOf('\n')) {
          yield buf.slice(0, at);
          buf = buf.slice(at + 1);
        }
      }
    })();
    assert.equal((await lines.next()).value, 'ready');
    // The node child is taskset's own process (taskset execs it).
    const before = new Map([[child.pid!, threadTimes(child.pid!)]]);
    assert.ok(before.get(child.pid!)!.has(child.pid!), 'the serving thread is listed under the pid');
    assert.equal((await lines.next()).value, 'done');
    const met = servingThreads(before, new Map([[child.pid!, threadTimes(child.pid!)]]));
    assert.ok(met.servingWaitS >= 0.1, `the serving thread waited ${met.servingWaitS} s`);
    assert.ok(met.othersRunS >= 0.1, `the other threads ran ${met.othersRunS} s`);
  } finally {
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
});

test('threadTimes of a process that is gone is empty', () => {
  assert.equal(threadTimes(2 ** 22 + 1).size, 0);
});
