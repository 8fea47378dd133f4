// Run by test/unit/binary-runs.test.ts in a process of its own, with a young generation of a
// fixed size: encodes blocks of counter runs into one binary frame, phase after phase, first
// below 2^31 and then across 2^31, across 2^32, below again and above 2^32 (the order in which a
// tag's IDs and a process's code meet them), and prints how many garbage collections each
// phase took, as JSON. What a phase allocates per block (a typed array's view, a run's halves)
// is a few hundred bytes; an ID that cost a heap number would be some 16 bytes each.
import { GCProfiler } from 'node:v8';
import { fillRuns } from '../../src/api/ws/encode.js';

const BLOCK = 1024;
const BLOCKS = 20_000;
const frame = Buffer.alloc(8 + 8 * BLOCK);
const plain = { plain: true, step: 1, base: 0 };

function phase(start: number): number {
  const profiler = new GCProfiler();
  profiler.start();
  let first = start;
  for (let i = 0; i < BLOCKS; i++) {
    fillRuns(frame, 0, [[first, first + BLOCK - 1]], plain);
    first += BLOCK;
  }
  return profiler.stop().statistics.length;
}

const half = (BLOCK * BLOCKS) / 2;
const phases: Record<string, number> = {};
phases['below 2^31'] = phase(1_000_000);
phases['across 2^31'] = phase(2 ** 31 - half);
phases['across 2^32'] = phase(2 ** 32 - half);
phases['below 2^31 again'] = phase(1_000_000);
phases['above 2^32'] = phase(5e9);
console.log(JSON.stringify(phases));
