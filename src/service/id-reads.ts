// The read side of the ID service: what a request may learn about a tag without issuing
// anything: its definition, an ID decoded, id_server's monitor counter, and what this
// process caches for it. Issuing has one door of its own (id-service.ts).
import { counterAt } from '../core/rule-spec.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import { admit } from './client-tokens.js';
import type { CoalescerDeps } from './coalescer.js';
import { invalid } from '../errors.js';
import { ruleInput } from './id-options.js';
import { scopeOf } from './rule-mode.js';
import { enabled, servable } from './segment-mode.js';
import type { SnowflakeDeps } from './sources.js';
import type { SourceCache } from './sources.js';
import type { TagRegistry } from './tag-registry.js';
import { kindOf, type Decoded } from './tag-kinds.js';

/** The pattern of an ID accepted for decoding (then also checked to be below 2^63). */
const DECODE_ID = /^[0-9]{1,19}$/;

export class IdReads {
  constructor(
    private readonly registry: TagRegistry,
    private readonly sources: SourceCache,
    private readonly segments: CoalescerDeps['segments'],
    private readonly clock: SnowflakeDeps['clock'],
    private readonly revealProtected: boolean,
  ) {}

  /**
   * The definition of `name` for a request carrying `token`: the tag exists, the token opens
   * it, and it is enabled, checked in that order, so a request without a valid token is told
   * nothing else about a protected tag (client-tokens.ts: the exposure policy). Else a coded error.
   */
  async access(name: string, token: string | undefined): Promise<StoredTag> {
    return enabled(name, admit(name, await this.registry.get(name), token, this.revealProtected));
  }

  /**
   * The definition of `name` for a caller every tag is open to (the admin and viewer tokens):
   * the tag exists and is enabled. Else a coded error.
   */
  async definition(name: string): Promise<StoredTag> {
    return servable(name, await this.registry.get(name));
  }

  /**
   * The parts of an ID of `name` (1 to 19 digits), for a request carrying `token`: as `access`
   * reads the tag, or as `definition` for `staff` (the admin or viewer token, the only
   * credential that decodes a permuted tag's IDs). How an ID decodes is its kind's (kinds/*.ts).
   */
  async decode(name: string, idText: string, token: string | undefined, staff: boolean): Promise<Decoded> {
    if (!DECODE_ID.test(idText)) throw invalid('id must be a decimal of 1 to 19 digits');
    const tag = staff ? await this.definition(name) : await this.access(name, token);
    return kindOf(tag).decode(tag, idText, staff);
  }

  /**
   * id_server's monitor: the last counter value handed out in the current period (-1: none yet):
   * by any process for `order: global`; by this process for `order: node`, whose other processes
   * hand out from blocks of their own (as each id_server node has its own counter).
   */
  async monitor(name: string, app: string | undefined, token?: string): Promise<{ counter: number }> {
    const tag = await this.access(name, token);
    if (tag.mode !== 'rule') throw invalid(`monitor applies to rule tags; "${name}" is a ${tag.mode} tag`);
    const { app: appName } = ruleInput(tag, { app });
    const scope = scopeOf(tag, appName, this.clock.now());
    let handedOut: number;
    if (tag.order === 'node') handedOut = this.sources.lastFromBlock(tag, scope) ?? 0;
    else {
      const st = await this.segments.stats({ tag: tag.tag, epoch: tag.epoch, shard: 0, scope, redis: tag.redis });
      handedOut = st.cur === undefined ? 0 : st.cur - 1;
    }
    return { counter: handedOut > 0 ? counterAt(tag.rule, tag, handedOut) : -1 };
  }

  /** The epoch whose sources are cached for a tag, and how many segment sources it has (tests, debugging). */
  cachedSources(name: string): { epoch: number; segments: number } | undefined {
    return this.sources.size(name);
  }
}
