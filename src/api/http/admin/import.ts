// Admin API for imports from Leaf, Tinyid, id_server and Leaf's snowflake mode (the same as
// `idmint import`): reads the old system's store, and creates or raises tags (through the door,
// service/tag-admin.ts, which announces each) so every later ID lies above every ID the old
// system handed out. `dry_run` answers the plan and writes nothing.
// id_server's config.json and Lua files come in the body: the route never reads files of the
// server it runs on.
import type { FastifyInstance } from 'fastify';
import { operatorFloor } from '../../../core/idserver-floors.js';
import { SYSTEMS, type OldSystem, type OperatorFloor } from '../../../core/import-plan.js';
import { invalid } from '../../../errors.js';
import type { Services } from '../../../runtime/runtime.js';

interface Body {
  system: OldSystem;
  mysql?: string;
  config_json?: string | Record<string, unknown>;
  lua_files?: Record<string, string>;
  time_zone?: string;
  dry_run?: boolean;
  force?: boolean;
  margin?: number;
  floors?: Record<string, number>;
  idserver_log?: string;
  trust_log?: boolean;
  tag?: string;
  twepoch?: number;
  layout?: string;
  clock_skew_ms?: number;
}

const ID_SERVER_FIELDS = [
  'config_json',
  'lua_files',
  'time_zone',
  'margin',
  'floors',
  'idserver_log',
  'trust_log',
] as const;
const SNOWFLAKE_FIELDS = ['tag', 'twepoch', 'layout', 'clock_skew_ms'] as const;

const body = {
  type: 'object',
  additionalProperties: false,
  required: ['system'],
  properties: {
    system: { type: 'string', enum: [...SYSTEMS] },
    mysql: { type: 'string', minLength: 1, maxLength: 1000 },
    config_json: { anyOf: [{ type: 'string', minLength: 1, maxLength: 65536 }, { type: 'object' }] },
    lua_files: { type: 'object', additionalProperties: { type: 'string', maxLength: 65536 }, maxProperties: 1000 },
    time_zone: { type: 'string', minLength: 1, maxLength: 64 },
    dry_run: { type: 'boolean' },
    force: { type: 'boolean' },
    margin: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    floors: { type: 'object', additionalProperties: { type: 'integer', minimum: 0 }, maxProperties: 1000 },
    idserver_log: { type: 'string', maxLength: 65536 },
    trust_log: { type: 'boolean' },
    tag: { type: 'string', minLength: 1, maxLength: 64 },
    twepoch: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    layout: { type: 'string', pattern: '^[0-9]{1,2}/[0-9]{1,2}/[0-9]{1,2}$' },
    clock_skew_ms: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  },
} as const;

export async function adminImportRoutes(app: FastifyInstance, opts: { rt: Services }): Promise<void> {
  const { rt } = opts;
  app.post<{ Body: Body }>('/v1/admin/import', { schema: { body } }, async (req) => {
    const fields = req.body;
    const misplaced = [
      ...(fields.system === 'id_server' ? [] : ID_SERVER_FIELDS.filter((k) => fields[k] !== undefined)),
      ...(fields.system === 'leaf-snowflake' ? [] : SNOWFLAKE_FIELDS.filter((k) => fields[k] !== undefined)),
      ...(fields.system === 'leaf-snowflake' && fields.mysql !== undefined ? ['mysql'] : []),
    ];
    if (misplaced.length) throw invalid(`${misplaced.join(', ')}: not a field of an import from ${fields.system}`);
    if (fields.system !== 'leaf-snowflake' && fields.mysql === undefined)
      throw invalid(`an import from ${fields.system} needs mysql (the URL of its database)`);
    if (fields.system === 'leaf-snowflake' && fields.tag === undefined)
      throw invalid("an import from leaf-snowflake needs tag: the idmint tag to create, the key Leaf's clients send");
    const floors: OperatorFloor[] = [];
    for (const [key, counter] of Object.entries(fields.floors ?? {})) {
      const floor = operatorFloor(key, counter);
      if (typeof floor === 'string') throw invalid(floor);
      floors.push(floor);
    }
    if (fields.system === 'id_server' && fields.config_json === undefined)
      throw invalid(
        'id_server needs config_json (the text of its config.json) and lua_files (each Lua file it names, by that name)',
      );
    const files =
      fields.config_json === undefined
        ? undefined
        : {
            config: typeof fields.config_json === 'string' ? fields.config_json : JSON.stringify(fields.config_json),
            lua: fields.lua_files ?? {},
          };
    const out = await rt.tagAdmin.importTags({
      system: fields.system,
      mysql: fields.mysql,
      files,
      timeZone: fields.time_zone,
      dryRun: fields.dry_run,
      force: fields.force,
      margin: fields.margin,
      floors,
      logs: fields.idserver_log === undefined ? undefined : [{ name: 'idserver_log', text: fields.idserver_log }],
      trustLog: fields.trust_log,
      leafSnowflake:
        fields.tag === undefined
          ? undefined
          : {
              tag: fields.tag,
              twepochMs: fields.twepoch,
              layout: layoutOf(fields.layout),
              clockSkewMs: fields.clock_skew_ms,
            },
      finish: `POST /v1/admin/import with the same body (system "${fields.system}")`,
    });
    if (!out.dry_run) req.log.info({ system: out.system, tags: out.tags.map((t) => `${t.tag}:${t.action}`) }, 'import');
    return out;
  });
}

/** Leaf's "<time>/<worker>/<sequence>" bits (the schema checked the shape). */
function layoutOf(layout: string | undefined): { timeBits: number; workerBits: number; seqBits: number } | undefined {
  if (layout === undefined) return undefined;
  const [timeBits, workerBits, seqBits] = layout.split('/').map(Number);
  return { timeBits, workerBits, seqBits };
}
