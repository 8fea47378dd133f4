// Shutdown as named steps under one deadline. Each step runs in turn while time is left; a
// step still running when the deadline passes is abandoned (it goes on in the background,
// its result ignored) and the steps after it are skipped, except the `always` ones, which
// run whatever happened before: they drop connections without asking the other side, so a
// silent Redis or MySQL cannot keep the process from ending. A step slower than a second is
// logged, so a slow shutdown says where the time went.
import type { Logger } from 'pino';

export interface ShutdownStep {
  readonly name: string;
  readonly run: () => Promise<unknown> | unknown;
  /** Runs even after the deadline passed or an earlier step was abandoned. */
  readonly always?: boolean;
}

export interface ShutdownOutcome {
  /** Steps abandoned at the deadline, then steps skipped because of it. */
  readonly unfinished: readonly string[];
  readonly ms: number;
}

const SLOW_STEP_MS = 1000;

export async function runShutdown(
  steps: readonly ShutdownStep[],
  deadlineMs: number,
  log: Pick<Logger, 'info' | 'warn'>,
): Promise<ShutdownOutcome> {
  const t0 = performance.now();
  const unfinished: string[] = [];
  for (const step of steps) {
    const left = deadlineMs - (performance.now() - t0);
    if (!step.always && (unfinished.length > 0 || left <= 0)) {
      unfinished.push(step.name);
      continue;
    }
    const started = performance.now();
    const done = await finishesWithin(step, step.always ? Math.max(left, SLOW_STEP_MS) : left, log);
    const took = performance.now() - started;
    if (!done) {
      unfinished.push(step.name);
      log.warn({ step: step.name, ms: Math.round(took) }, 'shutdown step did not finish in time; abandoned');
    } else if (took > SLOW_STEP_MS) {
      log.info({ step: step.name, ms: Math.round(took) }, 'slow shutdown step');
    }
  }
  return { unfinished, ms: performance.now() - t0 };
}

/** True when the step settled (resolved or failed: a failed step is over) within ms. */
async function finishesWithin(step: ShutdownStep, ms: number, log: Pick<Logger, 'warn'>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    const work = Promise.resolve()
      .then(step.run)
      .then(
        () => true,
        (err: Error) => {
          log.warn({ step: step.name, err: err?.message }, 'shutdown step failed');
          return true;
        },
      );
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
