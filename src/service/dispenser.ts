// Serves segment IDs for a tag: resolves the definition, picks the shard, and takes from the
// tag's coalescer (`order: global`) or its in-memory block (`order: node`).
import { IdmintError, invalid } from '../errors.js';
import { packId, shardOf } from '../core/layout.js';
import type { Range } from '../core/ranges.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import { Coalescer, type CoalescerDeps } from './coalescer.js';
import { NodeBuffer } from './node-buffer.js';
import type { TagRegistry } from './tag-registry.js';

export interface Issued {
  readonly tag: StoredTag;
  readonly shard: number;
  readonly runs: Range[];
}

export class Dispenser {
  private readonly coalescers = new Map<string, Coalescer>();
  private readonly buffers = new Map<string, NodeBuffer>();
  /** Latest definition seen per tag, read by coalescers for prefetch and block size. */
  private readonly specs = new Map<string, StoredTag>();

  constructor(
    readonly registry: TagRegistry,
    private readonly deps: CoalescerDeps,
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
    if (tag.layout !== 'sharded') {
      if (key !== undefined) throw invalid(`tag "${tag.tag}" is not sharded; drop the key parameter`);
      return 0;
    }
    if (key === undefined || key === '') throw invalid(`tag "${tag.tag}" is sharded: pass the key the ID is for (?key=...)`);
    return shardOf(key, tag.shards);
  }

  /** Takes count IDs (as ascending runs of counter values). */
  async take(name: string, count: number, key?: string): Promise<Issued> {
    const tag = await this.resolve(name);
    const shard = this.shardFor(tag, key);
    const k = `${tag.tag}\u0000${tag.epoch}\u0000${shard}`;
    let source = this.coalescers.get(k);
    if (!source) {
      source = new Coalescer({ tag: tag.tag, epoch: tag.epoch, shard }, () => this.specs.get(name)?.prefetch ?? tag.prefetch, this.deps);
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
