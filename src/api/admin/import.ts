// Admin API for imports from Leaf, Tinyid and id_server (the same as `idmint import`): reads
// the old system's store, and creates or raises tags so every later ID lies above every ID the
// old system handed out. `dry_run` answers the plan and writes nothing.
import type { FastifyInstance } from 'fastify';
import { SYSTEMS, type OldSystem } from '../../core/import-plan.js';
import { Importer } from '../../service/importer/importer.js';
import type { Runtime } from '../../runtime.js';

interface Body {
  system: OldSystem;
  mysql: string;
  config?: string;
  time_zone?: string;
  dry_run?: boolean;
  force?: boolean;
}

const body = {
  type: 'object',
  additionalProperties: false,
  required: ['system', 'mysql'],
  properties: {
    system: { type: 'string', enum: [...SYSTEMS] },
    mysql: { type: 'string', minLength: 1, maxLength: 1000 },
    config: { type: 'string', minLength: 1, maxLength: 4096 },
    time_zone: { type: 'string', minLength: 1, maxLength: 64 },
    dry_run: { type: 'boolean' },
    force: { type: 'boolean' },
  },
} as const;

export async function adminImportRoutes(app: FastifyInstance, opts: { rt: Runtime }): Promise<void> {
  const { rt } = opts;
  const importer = new Importer({
    pool: rt.pool, tags: rt.tags, tokens: rt.tokens, segments: rt.segments, log: rt.log,
    announce: (tag) => rt.registry.announce(tag),
  });
  app.post<{ Body: Body }>('/v1/admin/import', { schema: { body } }, async (req) => {
    const b = req.body;
    const out = await importer.run({ system: b.system, mysql: b.mysql, config: b.config, timeZone: b.time_zone, dryRun: b.dry_run, force: b.force });
    if (!out.dry_run) req.log.info({ system: out.system, tags: out.tags.map((t) => `${t.tag}:${t.action}`) }, 'import');
    return out;
  });
}
