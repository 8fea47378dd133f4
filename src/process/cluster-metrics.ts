// Metrics under `serve --processes N`: whichever process a scrape reaches answers for all of
// them. It asks the primary over the IPC channel; the primary collects every process's registry
// (prom-client's AggregatorRegistry, each metric by its aggregator: counters and histograms
// summed, gauges of shared state taken once) and answers with the text.
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

const ASK = 'idmint:metrics?';
const ANSWER = 'idmint:metrics';
/** Longer than prom-client's own 5 s for collecting from the processes. */
const WAIT_MS = 7000;

interface Ask {
  readonly type: typeof ASK;
  readonly id: number;
}
interface Answer {
  readonly type: typeof ANSWER;
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
}

/** In the primary: answers the processes' requests for the metrics of all of them. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: Ask | undefined) => {
    if (message?.type !== ASK) return;
    const reply = (answer: Omit<Answer, 'type' | 'id'>) => {
      if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, ...answer } satisfies Answer);
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (err: Error) => reply({ error: err.message }),
    );
  });
}

/**
 * In a serving process of the primary: offers `registry` to the aggregate and returns the
 * function that fetches the metrics of all processes.
 */
export function clusterMetricsClient(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry(); // installs prom-client's listener that answers the primary
  let next = 0;
  const pending = new Map<
    number,
    { resolve: (text: string) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }
  >();
  process.on('message', (message: Answer | undefined) => {
    if (message?.type !== ANSWER) return;
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    clearTimeout(waiter.timer);
    if (message.text !== undefined) waiter.resolve(message.text);
    else waiter.reject(new Error(message.error ?? 'no metrics in the answer'));
  });
  return () =>
    new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`the primary process did not answer within ${WAIT_MS} ms`));
      }, WAIT_MS);
      pending.set(id, { resolve, reject, timer });
      process.send!({ type: ASK, id } satisfies Ask);
    });
}

/** True in a serving process started by `serve --processes N`. */
export const inProcessGroup = (): boolean => cluster.isWorker && typeof process.send === 'function';
