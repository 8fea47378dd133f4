// Permuted IDs: a keyed pseudorandom permutation of a tag's counter over the IDs of a fixed
// width, so that an ID tells neither how many IDs came before it nor which came first.
//
// A balanced Feistel network on 2h bits (the smallest even number of bits whose range holds
// the domain) with PERMUTE_ROUNDS rounds; round i of input R is the first h bits of
// AES-128(key, [i, h, 0..., R]). The domain is [1, size) (size = 10^digits or 2^bits): counter
// values start at 1 and no ID is 0. Cycle-walking keeps the permutation inside it: a value
// that leaves the domain is encrypted again until it falls back in (its cycle under the
// Feistel permutation passes through the start, which lies in the domain, so this ends), and
// decryption walks back the same way. Each value of the domain is the ID of exactly one
// counter.
//
// Cost: halves of up to 15 bits (digits <= 9, bits <= 30) have every round value tabulated
// when the permutation is built, one AES call over all inputs; wider halves compute a batch of
// consecutive counters together (one AES call per round for the batch). Single IDs are
// computed a batch of consecutive counters ahead and kept, since a process is handed
// consecutive counters. Pure: the key is passed in, nothing is read.
import { createCipheriv, type Cipher } from 'node:crypto';
import type { Range } from './ranges.js';

/** Feistel rounds (FF3-1, a standard format-preserving cipher, uses 8 as well). */
export const PERMUTE_ROUNDS = 8;
/** Halves up to this many bits have their round function tabulated (8 rounds * 2^15 * 2 bytes = 512 KiB at most). */
const TABLE_MAX_HALF_BITS = 15;
/** Consecutive counters computed together when halves are too wide for tables. */
const BATCH = 128;
/** Permutations kept built (one per permuted tag in use; 128 MiB of round tables at most). */
const CACHE_SIZE = 256;

/** The permutation setting of a tag: IDs of at most `width` digits or bits, and its key. */
export interface PermuteSpec {
  readonly unit: 'digits' | 'bits';
  readonly width: number;
  /** 16 random bytes in hex (AES-128), fixed for the life of the tag. */
  readonly key: string;
}

/** Size of the domain: IDs lie in [1, size). */
export function domainSize(spec: Pick<PermuteSpec, 'unit' | 'width'>): bigint {
  return spec.unit === 'digits' ? 10n ** BigInt(spec.width) : 1n << BigInt(spec.width);
}

/** The largest ID (and counter) of the domain. */
export function domainMax(spec: Pick<PermuteSpec, 'unit' | 'width'>): bigint {
  return domainSize(spec) - 1n;
}

export class Permutation {
  /** Bits of each half. */
  readonly half: number;
  private readonly pow: number;
  /** The domain's size as (high half, low half): value < size iff (L, R) < (sizeHi, sizeLo). */
  private readonly sizeHi: number;
  private readonly sizeLo: number;
  private readonly cipher: Cipher;
  private readonly block = Buffer.alloc(16);
  private readonly table: Uint16Array | undefined;
  /** Values of L below this keep L * 2^h + R below 2^53 (exact as a number). */
  private readonly safeHi: number;
  /** The largest counter: size - 1, at most 2^53 - 1 (counters are numbers). */
  private readonly maxCounter: number;
  /** The last batch of IDs computed for single IDs: counters [batchFrom, batchFrom + length). */
  private batchFrom = 0;
  private batchIds: string[] = [];

  constructor(
    key: Buffer,
    readonly size: bigint,
  ) {
    if (key.length !== 16) throw new Error('a permutation key is 16 bytes');
    if (size < 2n || size > 1n << 64n) throw new Error('a permutation domain holds 2 to 2^64 values');
    const bits = (size - 1n).toString(2).length;
    this.half = Math.max(1, Math.ceil(bits / 2));
    this.pow = 2 ** this.half;
    this.sizeHi = Number(size >> BigInt(this.half));
    this.sizeLo = Number(size & BigInt(this.pow - 1));
    this.safeHi = 2 ** Math.max(0, 53 - this.half);
    this.maxCounter = size - 1n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(size - 1n);
    this.cipher = createCipheriv('aes-128-ecb', key, null);
    this.cipher.setAutoPadding(false);
    this.block[1] = this.half;
    this.table = this.half <= TABLE_MAX_HALF_BITS ? this.buildTable() : undefined;
  }

  /** Every round's value for every input, from one AES call. */
  private buildTable(): Uint16Array {
    const halfValues = this.pow;
    const input = Buffer.alloc(16 * halfValues * PERMUTE_ROUNDS);
    for (let i = 0; i < PERMUTE_ROUNDS; i++) {
      for (let r = 0; r < halfValues; r++) {
        const at = 16 * (i * halfValues + r);
        input[at] = i;
        input[at + 1] = this.half;
        input.writeUInt32BE(r, at + 12);
      }
    }
    const out = this.cipher.update(input);
    const shift = 32 - this.half;
    const table = new Uint16Array(halfValues * PERMUTE_ROUNDS);
    for (let j = 0; j < table.length; j++) table[j] = out.readUInt32BE(16 * j) >>> shift;
    return table;
  }

  /** Round `round`'s value of input `right` (a right half). */
  private round(round: number, right: number): number {
    if (this.table !== undefined) return this.table[(round << this.half) | right];
    this.block[0] = round;
    this.block.writeUInt32BE(right, 12);
    return this.cipher.update(this.block).readUInt32BE(0) >>> (32 - this.half);
  }

  private inDomain(left: number, right: number): boolean {
    return (left !== 0 || right !== 0) && (left < this.sizeHi || (left === this.sizeHi && right < this.sizeLo));
  }

  /** The halves of the last forward(): no array per ID on the path of single IDs. */
  private outL = 0;
  private outR = 0;

  /** The ID of value (left, right) (in the domain), left in outL and outR. */
  private forward(left: number, right: number): void {
    const table = this.table;
    if (table !== undefined) return this.forwardByTable(table, left | 0, right | 0);
    do {
      for (let i = 0; i < PERMUTE_ROUNDS; i++) {
        const next = (left ^ this.round(i, right)) >>> 0;
        left = right;
        right = next;
      }
    } while (!this.inDomain(left, right));
    this.outL = left;
    this.outR = right;
  }

  /** forward() with tabulated rounds: halves of at most 16 bits stay small integers. */
  private forwardByTable(table: Uint16Array, left: number, right: number): void {
    const half = this.half;
    do {
      for (let i = 0; i < PERMUTE_ROUNDS; i++) {
        const next = left ^ table[(i << half) | right];
        left = right;
        right = next;
      }
    } while (!this.inDomain(left, right));
    this.outL = left;
    this.outR = right;
  }

  private backward(left: number, right: number): [number, number] {
    do {
      for (let i = PERMUTE_ROUNDS - 1; i >= 0; i--) {
        const nextRight = left;
        left = (right ^ this.round(i, left)) >>> 0;
        right = nextRight;
      }
    } while (!this.inDomain(left, right));
    return [left, right];
  }

  private split(value: bigint): [number, number] {
    return [Number(value >> BigInt(this.half)), Number(value & BigInt(this.pow - 1))];
  }

  private join(left: number, right: number): bigint {
    return (BigInt(left) << BigInt(this.half)) | BigInt(right);
  }

  private text(left: number, right: number): string {
    return left < this.safeHi ? decimal(left * this.pow + right) : this.join(left, right).toString();
  }

  private check(counter: number): void {
    if (!(Number.isInteger(counter) && counter >= 1 && counter <= this.maxCounter))
      throw new RangeError(`counter ${counter} lies outside the permutation's domain [1, ${this.size})`);
  }

  /** The ID of `counter`. */
  encrypt(counter: bigint): bigint {
    if (counter < 1n || counter >= this.size)
      throw new RangeError(`${counter} lies outside the permutation's domain [1, ${this.size})`);
    this.forward(...this.split(counter));
    return this.join(this.outL, this.outR);
  }

  /** The counter whose ID is id; undefined when id lies outside the domain [1, size). */
  decrypt(id: bigint): bigint | undefined {
    if (id < 1n || id >= this.size) return undefined;
    return this.join(...this.backward(...this.split(id)));
  }

  /** The ID of `counter` as a decimal string: the path of single IDs. */
  idString(counter: number): string {
    const at = counter - this.batchFrom;
    if (at >= 0 && at < this.batchIds.length) return this.batchIds[at];
    this.check(counter);
    // The next counters too, while the tables or the cipher are warm: a server touches much
    // other memory between two requests, and a lone ID would meet the tables cold.
    this.batchIds = this.rangeStrings(counter, Math.min(counter + BATCH - 1, this.maxCounter));
    this.batchFrom = counter;
    return this.batchIds[0];
  }

  /** The IDs of counter runs, in the order of the runs (issue order), as decimal strings. */
  idStrings(runs: readonly Range[]): string[] {
    const out: string[] = [];
    for (const [first, last] of runs) {
      this.check(first);
      this.check(last);
      for (let k = first; k <= last; k += BATCH)
        for (const id of this.rangeStrings(k, Math.min(last, k + BATCH - 1))) out.push(id);
    }
    return out;
  }

  /** The IDs of counters first..last (in the domain). */
  private rangeStrings(first: number, last: number): string[] {
    if (this.table === undefined) return this.batchStrings(first, last);
    const out = new Array<string>(last - first + 1);
    for (let k = first; k <= last; k++) {
      const left = Math.floor(k / this.pow);
      this.forward(left, k - left * this.pow);
      out[k - first] = this.text(this.outL, this.outR);
    }
    return out;
  }

  /**
   * The IDs of counters first..last, computed together: each round of every value still walking is
   * one AES call over all their blocks.
   */
  private batchStrings(first: number, last: number): string[] {
    const count = last - first + 1;
    const ls = new Uint32Array(count);
    const rs = new Uint32Array(count);
    for (let j = 0; j < count; j++) {
      const counter = first + j;
      const left = Math.floor(counter / this.pow);
      ls[j] = left;
      rs[j] = counter - left * this.pow;
    }
    let walking = Array.from({ length: count }, (_, j) => j);
    const shift = 32 - this.half;
    while (walking.length > 0) {
      const blocks = walking.length;
      const input = Buffer.alloc(16 * blocks);
      for (let j = 0; j < blocks; j++) input[16 * j + 1] = this.half;
      for (let i = 0; i < PERMUTE_ROUNDS; i++) {
        for (let j = 0; j < blocks; j++) {
          const right = rs[walking[j]];
          const at = 16 * j;
          input[at] = i;
          input[at + 12] = right >>> 24;
          input[at + 13] = right >>> 16;
          input[at + 14] = right >>> 8;
          input[at + 15] = right;
        }
        const out = this.cipher.update(input);
        for (let j = 0; j < blocks; j++) {
          const slot = walking[j];
          const at = 16 * j;
          const roundValue = ((out[at] << 24) | (out[at + 1] << 16) | (out[at + 2] << 8) | out[at + 3]) >>> shift;
          const nextLeft = rs[slot];
          rs[slot] = ls[slot] ^ roundValue;
          ls[slot] = nextLeft;
        }
      }
      walking = walking.filter((w) => !this.inDomain(ls[w], rs[w]));
    }
    const ids = new Array<string>(count);
    for (let j = 0; j < count; j++) ids[j] = this.text(ls[j], rs[j]);
    return ids;
  }
}

/**
 * A whole number below 2^53 in decimal: above 2^31 as two parts below 2^31, which V8 writes
 * several times faster than the double itself.
 */
function decimal(value: number): string {
  if (value < 2_147_483_648) return String(value);
  const hi = Math.floor(value / 1e9);
  return String(hi) + String(value - hi * 1e9).padStart(9, '0');
}

const built = new Map<string, Permutation>();
/** The permutation of a setting object already seen: a definition keeps its object while cached. */
const ofSetting = new WeakMap<PermuteSpec, Permutation>();

/** The permutation of a setting, built once (round tables, cipher) and kept for later calls. */
export function permutationOf(spec: PermuteSpec): Permutation {
  const seen = ofSetting.get(spec);
  if (seen !== undefined) return seen;
  const id = `${spec.unit}:${spec.width}:${spec.key}`;
  let perm = built.get(id);
  if (perm === undefined) {
    perm = new Permutation(Buffer.from(spec.key, 'hex'), domainSize(spec));
    if (built.size >= CACHE_SIZE) built.delete(built.keys().next().value as string);
    built.set(id, perm);
  }
  ofSetting.set(spec, perm);
  return perm;
}

/**
 * The IDs of counter runs of a permuted tag, in issue order, as decimal strings: what a bulk
 * take sends for such a tag instead of runs (its IDs are not consecutive).
 */
export function permutedIds(spec: PermuteSpec, runs: readonly Range[]): string[] {
  return permutationOf(spec).idStrings(runs);
}

/** The counter behind a permuted ID; undefined when the ID lies outside the domain. */
export function counterOfPermuted(spec: PermuteSpec, id: bigint): bigint | undefined {
  return permutationOf(spec).decrypt(id);
}
