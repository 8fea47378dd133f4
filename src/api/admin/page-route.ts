// The web admin page at /admin: static HTML, ES modules and CSS from ./page, read once at
// start-up and served with a Content-Security-Policy that allows only this origin. The page
// itself is public (it holds no data); everything it shows comes from the admin API with the
// token the operator signs in with. GET /v1/admin/session tells the page which role that
// token has, so a viewer gets the read-only page.
import { readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Config } from '../../config.js';
import { IdmintError } from '../../errors.js';
import { adminGuard, adminRole } from '../auth.js';

export const PAGE_PATH = '/admin';
const ASSETS_PATH = `${PAGE_PATH}/assets`;
const PAGE_DIR = new URL('./page/', import.meta.url);

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'",
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

interface Asset {
  readonly body: Buffer;
  readonly type: string;
}

/** Every file of the page directory by name; a file of an unknown kind stops the start-up. */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(PAGE_DIR)) {
    const type = CONTENT_TYPES[extname(name)];
    if (type === undefined) throw new Error(`admin page: no content type for ${name}`);
    assets.set(name, { body: readFileSync(new URL(name, PAGE_DIR)), type });
  }
  if (!assets.has('index.html')) throw new Error('admin page: index.html is missing');
  return assets;
}

export default async function adminPageRoute(app: FastifyInstance, opts: { config: Config }): Promise<void> {
  const assets = loadAssets();
  const send = (reply: FastifyReply, a: Asset) => reply.headers(SECURITY_HEADERS).type(a.type).send(a.body);
  const index = assets.get('index.html') as Asset;

  app.get(PAGE_PATH, { schema: { hide: true } }, (_req, reply) => send(reply, index));
  app.get(`${PAGE_PATH}/`, { schema: { hide: true } }, (_req, reply) => send(reply, index));
  app.get<{ Params: { file: string } }>(`${ASSETS_PATH}/:file`, { schema: { hide: true } }, (req, reply) => {
    const a = req.params.file === 'index.html' ? undefined : assets.get(req.params.file);
    if (!a) throw new IdmintError('NOT_FOUND', `no file ${req.params.file} in the admin page`);
    return send(reply, a);
  });

  await app.register(async (scope) => {
    scope.addHook('onRequest', adminGuard(opts.config.adminToken, opts.config.viewerToken));
    scope.get(
      '/v1/admin/session',
      {
        schema: {
          summary: 'The role of the credential sent: admin (everything) or viewer (reads only)',
          security: [{ admin: [] }],
          response: { 200: { type: 'object', properties: { role: { type: 'string', enum: ['admin', 'viewer'] } } } },
        },
      },
      async (req) => ({ role: adminRole(req) }),
    );
  });
}
