// The Lua scripts of ./commands on one Redis connection, one typed method per script: typed
// arguments in the order of the script's ARGV, and its reply decoded (./replies.ts). Each call
// sends EVALSHA and, when Redis has forgotten the script (a restart, SCRIPT FLUSH, a replica
// promoted before it ran the script), the script itself with EVAL: the NOSCRIPT reply means
// the script did not run, so sending it again cannot run it twice. The text sent is the script
// with its includes expanded (./lua.ts), read once when this module's scripts are first asked
// for, so a missing include fails at start-up.
import { createHash } from 'node:crypto';
import type { Range } from '../../core/ranges.js';
import type { RedisClient } from './connection.js';
import {
  decodeClaim,
  decodeClaimsOrTakes,
  decodeHeld,
  decodeRecord,
  decodeUnclaim,
  type ClaimOrTakeResult,
  type ClaimResult,
  type RecordResult,
} from './idempotency-replies.js';
import { numberOfKeys, SCRIPT_FILES, scriptText, type ScriptFile } from './lua.js';
import {
  decodeAcquire,
  decodeExhaust,
  decodeInstall,
  decodePrime,
  decodeRelease,
  decodeRenew,
  decodeTake,
  type Acquired,
  type ExhaustResult,
  type InstallResult,
  type PrimeResult,
  type ReleaseResult,
  type RenewResult,
  type TakeResult,
} from './replies.js';

type Arg = string | number;

/** A script as Redis is sent it: its text, the text's SHA-1 (EVALSHA) and its number of keys. */
export interface LoadedScript {
  readonly text: string;
  readonly sha: string;
  readonly keys: number;
}

let loaded: Readonly<Record<ScriptFile, LoadedScript>> | undefined;

/** Every script of ./commands, read and expanded once per process. */
export function loadedScripts(): Readonly<Record<ScriptFile, LoadedScript>> {
  if (loaded === undefined) {
    const all = {} as Record<ScriptFile, LoadedScript>;
    for (const file of SCRIPT_FILES) {
      const text = scriptText(file);
      all[file] = { text, sha: createHash('sha1').update(text).digest('hex'), keys: numberOfKeys(file) };
    }
    loaded = all;
  }
  return loaded;
}

/** A failure handed on as it is (the scripts whose callers add nothing to it). */
const rethrow = (err: Error): never => {
  throw err;
};

/** Redis does not hold the script: it did not run, and EVAL of its text will. */
function noScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

export interface InstallArgs {
  readonly gen: string;
  readonly range: Range;
  readonly nowMs: number;
  readonly prefetch: number;
  /** The segment's last ID is the tag's limit: the hash is marked exhausted at once. */
  readonly final: boolean;
  /** The tag's largest counter value when the segment was allocated. */
  readonly limit: number;
  readonly epoch: number;
}

export interface AcquireArgs {
  /** 2^worker_bits. */
  readonly size: number;
  /** "<node id> <host>:<port>". */
  readonly value: string;
  readonly ttlMs: number;
  /** The id this process held before, or -1. */
  readonly preferred: number;
  readonly maxProbes: number;
  /** The latest wall-clock ms the caller may issue at under this lease. */
  readonly horizonMs: number;
}

/** idem-claim-3.lua's arguments after its keys. */
export interface ClaimArgs {
  readonly key: string;
  readonly fingerprint: string;
  /** A random token of the request: only it may record or release the claim. */
  readonly owner: string;
  /** How long the claim holds when its request never comes back. */
  readonly claimMs: number;
  readonly maxKeys: number;
  /** The most bytes the tag's live keys may cost (IDEMPOTENCY_MAX_BYTES). */
  readonly maxBytes: number;
  /** The bytes this key's answer may cost: its claim is charged that much until recorded. */
  readonly chargeBytes: number;
}

/** idem-takes-4.lua's arguments shared by the requests of one call. */
export interface TakesArgs {
  /** The records' common prefix: the record of key K is recordPrefix + K. */
  readonly recordPrefix: string;
  readonly claimMs: number;
  readonly maxKeys: number;
  readonly maxBytes: number;
  /** The tag's epoch (a "moved" marker at or above it retires the segment hash). */
  readonly epoch: number;
  /** How long an answer is kept. */
  readonly retentionMs: number;
  /** The ID of counter value k is k * stride + offset. */
  readonly stride: number;
  readonly offset: number;
}

/** One request of an idem-takes-4.lua call. */
export interface TakeRequest {
  readonly key: string;
  readonly fingerprint: string;
  readonly owner: string;
  /** The bytes its claim is charged until its answer is kept. */
  readonly chargeBytes: number;
  /** IDs wanted (1 .. 1000). */
  readonly n: number;
}

/** idem-record-3.lua's arguments after its keys. */
export interface RecordArgs {
  readonly key: string;
  readonly owner: string;
  readonly fingerprint: string;
  /** The IDs taken, encoded (core/idempotency-key.ts encodeIds). */
  readonly answer: string;
  readonly retentionMs: number;
}

const onConnection = new WeakMap<RedisClient, Scripts>();

/** The scripts of a connection, defined once for every caller that shares it. */
export function scriptsOf(redis: RedisClient): Scripts {
  let scripts = onConnection.get(redis);
  if (scripts === undefined) onConnection.set(redis, (scripts = new Scripts(redis)));
  return scripts;
}

export class Scripts {
  private readonly scripts = loadedScripts();
  constructor(private readonly redis: RedisClient) {}

  /**
   * The script's reply as `ok` makes it, or what `failed` makes of an error: EVALSHA, and EVAL
   * of its text when Redis has forgotten it, in one step beside ioredis's command.
   */
  private call<T>(
    file: ScriptFile,
    args: Arg[],
    ok: (reply: unknown) => T,
    failed: (err: Error) => T = rethrow,
  ): Promise<T> {
    const script = this.scripts[file];
    return this.redis
      .evalsha(script.sha, script.keys, ...args)
      .then(ok, (err: Error) =>
        noScript(err) ? this.redis.eval(script.text, script.keys, ...args).then(ok, failed) : failed(err),
      );
  }

  /**
   * take-2.lua: up to `count` IDs of a (tag, shard). segment: its hash; moved: the tag's "moved"
   * marker; gen: used only when the hash is created; prefetch: the fraction of a segment at
   * which the next one is wanted. The request path's call: `ok` gets the decoded reply and
   * `failed` the error in the script call's step, so the caller adds no promise of its own.
   */
  take<T>(
    segment: string,
    moved: string,
    count: number,
    gen: string,
    prefetch: number,
    epoch: number,
    ok: (result: TakeResult) => T,
    failed: (err: Error) => T,
  ): Promise<T> {
    return this.call(
      'take-2',
      [segment, moved, count, gen, prefetch, epoch],
      (reply) => ok(decodeTake(reply, count)),
      failed,
    );
  }

  /** install-2.lua: a segment allocated in MySQL into the hash, with its fences. */
  install(segment: string, moved: string, args: InstallArgs): Promise<InstallResult> {
    return this.call(
      'install-2',
      [
        segment,
        moved,
        args.gen,
        args.range[0],
        args.range[1],
        args.nowMs,
        args.prefetch,
        args.final ? 1 : 0,
        args.limit,
        args.epoch,
      ],
      decodeInstall,
    );
  }

  /** exhaust-1.lua: marks the hash exhausted under gen. */
  exhaust(segment: string, gen: string): Promise<ExhaustResult> {
    return this.call('exhaust-1', [segment, gen], decodeExhaust);
  }

  /** prime-2.lua: creates the hash of a counter not taken from yet under gen, or leaves it as it is. */
  prime(segment: string, moved: string, gen: string, epoch: number): Promise<PrimeResult> {
    return this.call('prime-2', [segment, moved, gen, epoch], decodePrime);
  }

  /** lease-acquire-1.lua: a free worker id of the space whose key base is `space`. */
  leaseAcquire(space: string, args: AcquireArgs): Promise<Acquired> {
    return this.call(
      'lease-acquire-1',
      [space, args.size, args.value, args.ttlMs, args.preferred, args.maxProbes, args.horizonMs],
      decodeAcquire,
    );
  }

  /** lease-renew-1.lua: compare and extend; lastMs: what the holder may issue until the new expiry. */
  leaseRenew(space: string, workerId: number, value: string, ttlMs: number, lastMs: number): Promise<RenewResult> {
    return this.call('lease-renew-1', [space, workerId, value, ttlMs, lastMs], decodeRenew);
  }

  /** lease-release-1.lua: gives the id back if still ours; lastMs: the last ms actually issued. */
  leaseRelease(space: string, workerId: number, value: string, lastMs: number): Promise<ReleaseResult> {
    return this.call('lease-release-1', [space, workerId, value, lastMs], decodeRelease);
  }

  /** idem-claim-3.lua: an idempotency key's kept answer, else a claim on it for this request (or why not). */
  idemClaim(record: string, index: string, bytes: string, args: ClaimArgs): Promise<ClaimResult> {
    return this.call(
      'idem-claim-3',
      [
        record,
        index,
        bytes,
        args.key,
        args.fingerprint,
        args.owner,
        args.claimMs,
        args.maxKeys,
        args.maxBytes,
        args.chargeBytes,
      ],
      decodeClaim,
    );
  }

  /**
   * idem-takes-4.lua: for each request, in order, its key's kept answer, else its IDs taken from
   * the segment hash and kept in the same call (the hash's steady state), else a claim on its
   * key (or why not).
   */
  idemTakes(
    segment: string,
    index: string,
    bytes: string,
    moved: string,
    shared: TakesArgs,
    requests: readonly TakeRequest[],
  ): Promise<ClaimOrTakeResult[]> {
    const args: Arg[] = [
      segment,
      index,
      bytes,
      moved,
      shared.recordPrefix,
      shared.claimMs,
      shared.maxKeys,
      shared.maxBytes,
      shared.epoch,
      shared.retentionMs,
      shared.stride,
      shared.offset,
    ];
    for (const request of requests)
      args.push(request.key, request.fingerprint, request.owner, request.chargeBytes, request.n);
    return this.call('idem-takes-4', args, (reply) => decodeClaimsOrTakes(reply, requests.length));
  }

  /** idem-record-3.lua: turns the request's claim into the key's answer, unless the key has another. */
  idemRecord(record: string, index: string, bytes: string, args: RecordArgs): Promise<RecordResult> {
    return this.call(
      'idem-record-3',
      [record, index, bytes, args.key, args.owner, args.fingerprint, args.answer, args.retentionMs],
      decodeRecord,
    );
  }

  /** idem-release-3.lua: gives up the request's claim (its take failed); false when it held none. */
  idemRelease(record: string, index: string, bytes: string, key: string, owner: string): Promise<boolean> {
    return this.call('idem-release-3', [record, index, bytes, key, owner], decodeUnclaim);
  }

  /** idem-held-1.lua: the live idempotency keys of an index. */
  idemHeld(index: string): Promise<number> {
    return this.call('idem-held-1', [index], decodeHeld);
  }
}
