// How long a BullMQ worker rests after fetching its next job failed on a connection error.
// BullMQ's default is 15 s: after a Sentinel failover or a connection reopened, a worker whose
// fetch failed while its connection was down would leave refills (and lease renewals) waiting
// that long although Redis answers again within a second or two. A second keeps the retries
// cheap while Redis is really away.
export const WORKER_RUN_RETRY_MS = 1000;
