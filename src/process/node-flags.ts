// The Node.js flags a serving process runs with, and which of them a process was started without.
//
// --max-semi-space-size=64: V8's young generation, where every request's objects are made, is
// collected (scavenged) each time it fills. With Node's default (16 MB semi-spaces) a process
// serving rule IDs in order global over UDP filled it every few tens of milliseconds and spent
// milliseconds on each collection copying what was still alive, the objects of the requests in
// flight (`--trace-gc-nvp`), and most of what survived was promoted to the old generation, to
// be collected again there. With 64 MB semi-spaces the same copy comes about four times less
// often: the process spends less CPU per request, and its resident memory at its peak was no
// higher (less garbage reached the old generation). docs/BENCHMARKS.md ("UDP") gives the runs;
// docs/OPERATIONS.md ("Node flags") the operator's side.
//
// --min-semi-space-size=64: the young generation keeps that size. Left to V8 it grows to it
// under load, and V8's memory reducer, which runs once a process has made little garbage for a
// few seconds, shrinks it back to its smallest (1 MB semi-spaces). A server loaded again after an
// idle spell then scavenged 15 times a second where it had scavenged once, each pause about half
// a millisecond however little survived: 7 ms a second of pauses against 1.5 (`--trace-gc`, and
// bench:bulk-single's "GC paused the loop" by round); V8 grows it again only as objects survive,
// and with little surviving it had not grown back a minute later. The memory reducer still
// shrinks the old generation.
//
// --single-threaded-gc: V8 collects garbage on the serving thread alone, in its own small steps,
// instead of also on helper threads beside it. A server runs on one core (the Kubernetes
// manifest's limit is 1 CPU; `serve --processes N` runs a process per core), so a helper thread
// can only run by taking that core from the serving thread, and the scheduler gives it a whole
// slice, milliseconds, while every request that comes meanwhile waits. Beside a bulk stream,
// whose takes make garbage, the serving thread waited for its core twice as long as alone or
// more; with the flag about as long as alone (bench:bulk-single's "serving thread waited for the
// CPU"). The same work is done, on one thread. docs/BENCHMARKS.md ("Single IDs beside a bulk
// stream", "UDP") gives the runs.
//
// The shipped ways to start a server pass these flags (package.json's scripts, the Dockerfile,
// the Kubernetes manifest, bin/idmint.mjs); node-flags.test.ts checks each names them. `serve`
// started without one logs so, and `serve --processes N` gives its workers the missing ones.

/** The flags of a serving process, as given to node. */
export const SERVE_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=64',
  '--min-semi-space-size=64',
  '--single-threaded-gc',
];

/** A flag's name as V8 reads it: dashes and underscores alike, any value and a negating `no-` dropped. */
const flagName = (arg: string): string =>
  arg
    .split('=')[0]
    .replace(/_/g, '-')
    .replace(/^--no-/, '--');

/**
 * The flags of SERVE_NODE_FLAGS a process started with `execArgv` and NODE_OPTIONS
 * `nodeOptions` lacks. A flag given with another value, or negated (`--no-single-threaded-gc`),
 * counts as given: it is the operator's.
 */
export function missingServeFlags(execArgv: readonly string[], nodeOptions = ''): string[] {
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)].filter((a) => a.startsWith('--')).map(flagName));
  return SERVE_NODE_FLAGS.filter((f) => !given.has(flagName(f)));
}

/** The flags of SERVE_NODE_FLAGS this process was started without. */
export const flagsThisProcessLacks = (): string[] => missingServeFlags(process.execArgv, process.env.NODE_OPTIONS);
