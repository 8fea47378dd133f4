// The web admin page at /admin: static HTML, ES modules and CSS from ./page, read once at
// start-up and served with a Content-Security-Policy that allows only this origin. The page
// itself is public (it holds no data); everything it shows comes from the admin API with the
// token the operator signs in with. POST /v1/admin/session signs in: it checks the token sent as
// `Authorization: Bearer`, answers its role and sets the session cookie (session-cookie.ts),
// which the page's script never sees; DELETE signs out, clearing it. GET tells the page which
// role the cookie's token has, so a viewer gets the read-only page.
import { readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { IdmintError } from '../../../errors.js';
import { adminGuard, adminRole, type AdminAccess } from '../auth.js';
import { bearerToken } from '../../credentials.js';
import { clearedCookies, sessionCookies } from './session-cookie.js';

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

/**
 * The browser reached the page over TLS: this server's own, or a proxy's in front of it that
 * says so (X-Forwarded-Proto). Believing the header costs nothing: a Secure cookie is only
 * kept back from plain HTTP.
 */
function overTls(req: FastifyRequest): boolean {
  const fwd = req.headers['x-forwarded-proto'];
  return req.protocol === 'https' || (typeof fwd === 'string' && fwd.split(',')[0].trim().toLowerCase() === 'https');
}

export default async function adminPageRoute(app: FastifyInstance, opts: { access: AdminAccess }): Promise<void> {
  const assets = loadAssets();
  const send = (reply: FastifyReply, a: Asset) => reply.headers(SECURITY_HEADERS).type(a.type).send(a.body);
  const index = assets.get('index.html') as Asset;

  app.get(PAGE_PATH, { schema: { hide: true } }, (_req, reply) => send(reply, index));
  app.get(`${PAGE_PATH}/`, { schema: { hide: true } }, (_req, reply) => send(reply, index));
  app.get<{ Params: { file: string } }>(`${ASSETS_PATH}/:file`, { schema: { hide: true } }, (req, reply) => {
    const asset = req.params.file === 'index.html' ? undefined : assets.get(req.params.file);
    if (!asset) throw new IdmintError('NOT_FOUND', `no file ${req.params.file} in the admin page`);
    return send(reply, asset);
  });

  const roleSchema = { 200: { type: 'object', properties: { role: { type: 'string', enum: ['admin', 'viewer'] } } } };
  await app.register(async (scope) => {
    scope.addHook('onRequest', adminGuard(opts.access));
    scope.get(
      '/v1/admin/session',
      {
        schema: {
          summary: 'The role of the credential sent: admin (everything) or viewer (reads only)',
          security: [{ admin: [] }],
          response: roleSchema,
        },
      },
      async (req) => ({ role: adminRole(req) }),
    );
  });
  // Signing in changes nothing: the viewer token may do it too.
  await app.register(async (scope) => {
    scope.addHook('onRequest', adminGuard(opts.access, true));
    scope.post(
      '/v1/admin/session',
      {
        schema: {
          summary:
            'Sign in (the admin page): the role of the token sent as Authorization: Bearer, kept in an HttpOnly cookie of the admin paths',
          security: [{ admin: [] }],
          response: roleSchema,
        },
      },
      async (req, reply) => {
        const token = bearerToken(req.headers.authorization);
        if (token === undefined)
          throw new IdmintError('UNAUTHORIZED', 'sign in with Authorization: Bearer <admin or viewer token>');
        reply.header('set-cookie', sessionCookies(token, overTls(req)));
        return { role: adminRole(req) };
      },
    );
  });
  // Anyone may drop their own cookie, a stale one included.
  app.delete(
    '/v1/admin/session',
    { schema: { summary: 'Sign out (the admin page): clears the session cookie' } },
    async (req, reply) => {
      reply.header('set-cookie', clearedCookies(overTls(req)));
      return reply.code(204).send();
    },
  );
}
