import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { keepCpusAwake } from '../../bench/keep-awake.js';
import { readStat, stealSeconds } from '../../tools/cpu.js';

const status = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
};
/** A /proc/<pid>/status line's value. */
const field = (text: string, name: string): string | undefined =>
  text
    .split('\n')
    .find((line) => line.startsWith(`${name}:`))
    ?.split(':')[1]
    .trim();

test('keepCpusAwake runs one SCHED_IDLE spinner on each CPU, pinned to it, and stop() ends them', async () => {
  const spinners = await keepCpusAwake();
  try {
    assert.equal(spinners.pids.length, cpus().length);
    spinners.pids.forEach((pid, cpu) => {
      assert.equal(readStat(pid).fields[41 - 3], '5', `spinner of CPU ${cpu} runs at SCHED_IDLE (policy 5)`);
      assert.equal(field(status(pid) ?? '', 'Cpus_allowed_list'), String(cpu));
    });
  } finally {
    spinners.stop();
  }
  for (const pid of spinners.pids)
    while (status(pid) !== undefined && field(status(pid)!, 'State')?.[0] !== 'Z') await sleep(10);
});

test('stealSeconds reads a CPU and the machine from /proc/stat, and the unknown as NaN', () => {
  const [one, all] = [stealSeconds(0), stealSeconds()];
  assert.ok(Number.isFinite(one) && one >= 0, String(one));
  assert.ok(Number.isFinite(all) && all >= one, `${all} ≥ ${one}`);
  assert.ok(Number.isNaN(stealSeconds(cpus().length + 64)));
});

test('the spinners end when the process that started them is killed', async () => {
  const script =
    "import('./bench/keep-awake.ts').then(async (m) => console.log((await m.keepCpusAwake()).pids.join(' ')))";
  const parent = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = (await once(parent.stdout, 'data')) as [Buffer];
  const pids = chunk.toString().trim().split(' ').map(Number);
  assert.equal(pids.length, cpus().length);
  assert.ok(pids.every((pid) => status(pid) !== undefined));
  parent.kill('SIGKILL');
  for (const pid of pids)
    while (status(pid) !== undefined && field(status(pid)!, 'State')?.[0] !== 'Z') await sleep(10);
});
