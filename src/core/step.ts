// Adaptive segment sizing: the next segment should last about `targetSeconds` at the rate
// the tag is being consumed, clamped to the tag's [minStep, maxStep].

export interface StepInput {
  /** IDs taken from the tag since the previous refill was installed. */
  readonly takenSince: number;
  /** Milliseconds since the previous refill was installed; 0 or less when unknown. */
  readonly elapsedMs: number;
  readonly currentStep: number;
  readonly minStep: number;
  readonly maxStep: number;
  readonly targetSeconds: number;
}

export function clamp(value: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, value));
}

/** Consumption rate in IDs per second, or undefined when there is no usable history. */
export function consumptionRate(takenSince: number, elapsedMs: number): number | undefined {
  if (!(elapsedMs > 0) || !(takenSince >= 0)) return undefined;
  return (takenSince * 1000) / elapsedMs;
}

/** step = clamp(rate × target_seconds, min_step, max_step); without history the current step, clamped. */
export function nextStep(input: StepInput): number {
  const rate = consumptionRate(input.takenSince, input.elapsedMs);
  const wanted = rate === undefined ? input.currentStep : Math.ceil(rate * input.targetSeconds);
  return Math.floor(clamp(wanted, input.minStep, input.maxStep));
}
