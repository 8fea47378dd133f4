// A stream socket's messages written a fragment at a time (src/api/ws/fragmented-writes.ts),
// against a socket that checks what a websocket reader checks: a message is a run of sends
// ending with one whose fin is not false, and no other data message starts inside it. The test
// writes large and small messages and replies from concurrent callers, as a session's takes and
// its refusals do, and reads back the messages the reader would assemble.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WebSocket } from 'ws';
import { BulkTurns, type TurnClock } from '../../src/api/bulk-turns.js';
import { FRAGMENT_BYTES, FragmentedWrites } from '../../src/api/ws/fragmented-writes.js';

interface Sent {
  readonly bytes: Buffer;
  readonly binary: boolean;
  readonly fin: boolean;
}

/** A socket recording its sends, and the messages a reader would assemble from them. */
function recordingSocket() {
  const sends: Sent[] = [];
  const socket = {
    send(data: Buffer | string, a?: unknown, b?: unknown) {
      const options = typeof a === 'object' && a !== null ? (a as { binary?: boolean; fin?: boolean }) : {};
      const done = (typeof a === 'function' ? a : b) as ((err?: Error) => void) | undefined;
      const binary = typeof data === 'string' ? false : options.binary !== false;
      sends.push({ bytes: Buffer.from(data), binary, fin: options.fin !== false });
      if (done) queueMicrotask(() => done());
    },
  };
  /** The messages: each fragment after the first must belong to its message (same kind). */
  const messages = (): { bytes: Buffer; binary: boolean }[] => {
    const out: { bytes: Buffer; binary: boolean }[] = [];
    let open: { parts: Buffer[]; binary: boolean } | undefined;
    for (const s of sends) {
      if (open === undefined) open = { parts: [], binary: s.binary };
      else assert.equal(s.binary, open.binary, 'a data message of another kind inside a fragmented one');
      open.parts.push(s.bytes);
      if (s.fin) {
        out.push({ bytes: Buffer.concat(open.parts), binary: open.binary });
        open = undefined;
      }
    }
    assert.equal(open, undefined, 'a message left unfinished');
    return out;
  };
  return { sends, messages, socket: socket as unknown as WebSocket };
}

/** Writes a frame as the session does: waits for the gate and a turn, then writes it. */
async function sendAsSession(writes: FragmentedWrites, turns: BulkTurns, frame: Buffer | string): Promise<void> {
  for (;;) {
    await writes.gateOpen();
    await turns.next();
    if (!writes.busy) break;
  }
  let done!: () => void;
  const written = new Promise<void>((resolve) => {
    done = resolve;
  });
  assert.equal(await writes.write(frame, done), true);
  await written;
}

/**
 * Turns that run at once, beside single requests (`serving`: the count moves at every look) or
 * with none (the count stands still and each look comes two windows after the last).
 */
function turnsWith(serving: boolean): BulkTurns {
  let singles = 0;
  let now = 0;
  const clock: TurnClock = {
    now: () => (serving ? now : (now += 20)),
    singles: () => (serving ? ++singles : singles),
    immediate: (turn) => setImmediate(turn),
    later: (turn, ms) => setTimeout(turn, ms),
    busy: () => 0,
  };
  return new BulkTurns(1, clock);
}

const filled = (bytes: number, seed: number): Buffer => {
  const b = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
};

describe('fragmented writes', () => {
  it('writes a frame larger than a fragment as fragments of at most FRAGMENT_BYTES, one per turn, that read back as the frame', async () => {
    const { sends, messages, socket } = recordingSocket();
    const turns = turnsWith(true);
    const writes = new FragmentedWrites(socket, turns, () => false);
    const frame = filled(5 * FRAGMENT_BYTES + 17, 1);
    await sendAsSession(writes, turns, frame);
    assert.equal(sends.length, 6);
    assert.ok(sends.every((s) => s.bytes.length <= FRAGMENT_BYTES));
    assert.deepEqual(
      sends.map((s) => s.fin),
      [false, false, false, false, false, true],
    );
    const [message] = messages();
    assert.equal(message.binary, true);
    assert.ok(message.bytes.equals(frame));
  });

  it('never starts a message inside another: concurrent large and small frames and replies each read back whole', async () => {
    const { messages, socket } = recordingSocket();
    const turns = turnsWith(true);
    const writes = new FragmentedWrites(socket, turns, () => false);
    const frames: (Buffer | string)[] = [
      filled(3 * FRAGMENT_BYTES, 2),
      filled(2 * FRAGMENT_BYTES + 1, 3),
      `{"op":"block","req":7,"ids":["${'1'.repeat(2 * FRAGMENT_BYTES)}"]}`,
      filled(100, 4),
      '{"op":"done","req":9}',
    ];
    const sending = frames.map((frame) => sendAsSession(writes, turns, frame));
    // A reply while the first frame is being written in fragments is held until it ends.
    for (let turn = 0; !writes.busy && turn < 10; turn++) await turns.next();
    writes.sendText('{"op":"error","req":null}', () => {});
    await Promise.all(sending);
    const got = messages();
    assert.equal(got.length, frames.length + 1);
    const expected = [...frames, '{"op":"error","req":null}'].map((f) => ({
      bytes: Buffer.from(f),
      binary: typeof f !== 'string',
    }));
    const key = (m: { bytes: Buffer; binary: boolean }) => `${m.binary}:${m.bytes.toString('base64')}`;
    assert.deepEqual(got.map(key).sort(), expected.map(key).sort());
    const reply = got.findIndex((m) => m.bytes.toString() === '{"op":"error","req":null}');
    assert.ok(reply >= 1, 'the reply came after the message it was held for');
  });

  it('lets one holder at a time write a message piece by piece; a write and a reply wait for its release', async () => {
    const { messages, socket } = recordingSocket();
    const turns = turnsWith(true);
    const writes = new FragmentedWrites(socket, turns, () => false);
    const a = filled(3 * FRAGMENT_BYTES, 6);
    const b = filled(2 * FRAGMENT_BYTES, 7);
    const c = filled(2 * FRAGMENT_BYTES + 5, 8);
    /** Holds the socket and writes `frame` in pieces of a fragment, a turn each. */
    const holdAndWrite = async (frame: Buffer) => {
      await writes.hold();
      try {
        for (let at = 0; at < frame.length; at += FRAGMENT_BYTES) {
          await turns.next();
          const end = Math.min(frame.length, at + FRAGMENT_BYTES);
          writes.piece(frame.subarray(at, end), end === frame.length);
        }
      } finally {
        writes.release();
      }
    };
    const all = Promise.all([holdAndWrite(a), holdAndWrite(b), sendAsSession(writes, turns, c)]);
    for (let turn = 0; !writes.busy && turn < 10; turn++) await turns.next();
    writes.sendText('{"op":"error","req":3}', () => {});
    let finished = false;
    void all.then(() => {
      finished = true;
    });
    for (let turn = 0; !finished && turn < 500; turn++) await turns.next();
    assert.ok(finished, 'the holders and the write ended');
    await all;
    const got = messages().map((m) => m.bytes);
    assert.equal(got.length, 4);
    for (const frame of [a, b, c]) assert.ok(got.some((m) => m.equals(frame)));
    assert.ok(got.findIndex((m) => m.toString() === '{"op":"error","req":3}') >= 1);
  });

  it('writes a large frame whole while no single request is being served', async () => {
    const { sends, messages, socket } = recordingSocket();
    const turns = turnsWith(false);
    turns.servingSingles(); // the first look counts the singles that ever came
    const writes = new FragmentedWrites(socket, turns, () => false);
    const frame = filled(3 * FRAGMENT_BYTES, 9);
    await sendAsSession(writes, turns, frame);
    assert.equal(sends.length, 1);
    assert.equal(writes.cutting(), false);
    assert.ok(messages()[0].bytes.equals(frame));
  });

  it('stops between fragments once the socket is gone and opens the gate again', async () => {
    const { sends, socket } = recordingSocket();
    const turns = turnsWith(true);
    let gone = false;
    const writes = new FragmentedWrites(socket, turns, () => gone);
    await turns.next();
    const writing = writes.write(filled(4 * FRAGMENT_BYTES, 5), () => {});
    gone = true;
    assert.equal(await writing, false);
    assert.equal(sends.length, 1);
    assert.equal(writes.busy, false);
    await writes.gateOpen();
  });
});
