// Serves IDs for a tag: resolves the definition, then takes from the tag's segment source
// (coalescer for `order: global`, in-memory block for `order: node`, per shard) or from its
// snowflake generator.
import type { Clock } from '../core/clock.js';
import { packId, shardOf } from '../core/layout.js';
import type { Range } from '../core/ranges.js';
import { IdmintError, invalid } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import { Coalescer, type CoalescerDeps } from './coalescer.js';
import type { LeaseManager } from './lease-manager.js';
import { NodeBuffer } from './node-buffer.js';
import { SnowflakeGenerator, type ClockEvents } from './snowflake-generator.js';
import type { TagRegistry } from './tag-registry.js';

export interface Issued {
  readonly tag: StoredTag;
  readonly shard: number;
  readonly runs: Range[];
}

export interface SnowflakeDeps {
  readonly leases: LeaseManager;
  readonly clock: Clock;
  readonly maxBackMs: number;
}

export class Dispenser {
  private readonly coalescers = new Map<string, Coalescer>();
  private readonly buffers = new Map<string, NodeBuffer>();
  private readonly generators = new Map<string, SnowflakeGenerator>();
  /** Latest definition seen per tag, read by coalescers for prefetch and block size. */
  private readonly specs = new Map<string, StoredTag>();
  /** Clock events of all snowflake generators of this process. */
  readonly clockEvents: ClockEvents = { backwards: 0, waits: 0 };

  constructor(
    readonly registry: TagRegistry,
    private readonly deps: CoalescerDeps,
    private readonly snowflake: SnowflakeDeps,
  ) {}

  /** The enabled tag of that name, or a coded error. */
  async resolve(name: string): Promise<StoredTag> {
    const tag = await this.registry.get(name);
    if (!tag) throw new IdmintError('TAG_NOT_FOUND', `tag "${name}" does not exist`);
    if (!tag.enabled) throw new IdmintError('TAG_DISABLED', `tag "${name}" is disabled`);
    this.specs.set(name, tag);
    return tag;
  }

  shardFor(tag: StoredTag, key: string | undefined): number {
    if (tag.layout !== 'sharded' || tag.mode !== 'segment') {
      if (key !== undefined) throw invalid(`tag "${tag.tag}" is not sharded; drop the key parameter`);
      return 0;
    }
    if (key === undefined || key === '') throw invalid(`tag "${tag.tag}" is sharded: pass the key the ID is for (?key=...)`);
    return shardOf(key, tag.shards);
  }

  /** count IDs of any mode, as decimal strings, ascending. */
  async ids(name: string, count: number, key?: string): Promise<string[]> {
    const tag = await this.resolve(name);
    if (tag.mode === 'snowflake') {
      this.shardFor(tag, key);
      return (await this.generator(tag).take(count)).map(String);
    }
    return Dispenser.format(await this.takeSegment(tag, count, key));
  }

  /** count IDs of a segment tag, as ascending runs of counter values. */
  async take(name: string, count: number, key?: string): Promise<Issued> {
    const tag = await this.resolve(name);
    if (tag.mode !== 'segment') throw invalid(`tag "${name}" is a ${tag.mode} tag`);
    return this.takeSegment(tag, count, key);
  }

  private generator(tag: StoredTag): SnowflakeGenerator {
    const k = `${tag.tag}\u0000${tag.epoch}`;
    let g = this.generators.get(k);
    if (!g) {
      const { leases, clock, maxBackMs } = this.snowflake;
      g = new SnowflakeGenerator(tag.snowflake!, leases, clock, maxBackMs, this.clockEvents);
      this.generators.set(k, g);
    }
    return g;
  }

  private async takeSegment(tag: StoredTag, count: number, key: string | undefined): Promise<Issued> {
    const name = tag.tag;
    const shard = this.shardFor(tag, key);
    const k = `${name}\u0000${tag.epoch}\u0000${shard}`;
    let source = this.coalescers.get(k);
    if (!source) {
      source = new Coalescer({ tag: name, epoch: tag.epoch, shard }, () => this.specs.get(name)?.prefetch ?? tag.prefetch, this.deps);
      this.coalescers.set(k, source);
    }
    let runs: Range[];
    if (tag.order === 'node') {
      let buf = this.buffers.get(k);
      if (!buf) {
        buf = new NodeBuffer(source, () => this.specs.get(name)?.nodeBlock ?? tag.nodeBlock);
        this.buffers.set(k, buf);
      }
      runs = await buf.take(count);
    } else {
      runs = await source.take(count);
    }
    return { tag, shard, runs };
  }

  /** Decimal strings of the IDs, packed per the tag's layout. */
  static format(issued: Issued): string[] {
    const out: string[] = [];
    const { tag, shard } = issued;
    for (const [a, b] of issued.runs) {
      for (let v = a; v <= b; v++) out.push(tag.layout === 'plain' ? String(v) : packId(tag, BigInt(v), shard).toString());
    }
    return out;
  }
}
