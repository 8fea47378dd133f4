// Bull Board at /admin/queues for idmint's queues (refills, lease renewals, janitor), inside
// the admin scope (the same token as the admin API).
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

export const QUEUES_PATH = '/admin/queues';

export async function queueBoard(app: FastifyInstance, opts: { queues: Queue[] }): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(QUEUES_PATH);
  createBullBoard({ queues: opts.queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  await app.register(serverAdapter.registerPlugin(), { prefix: QUEUES_PATH });
}
