// Lint rules for idmint: ESLint's and typescript-eslint's recommended sets (none that needs
// type information, which would make every run build the whole program), plus `idmint/layers`,
// which holds the import direction of src/: src/core is pure ID logic and does no I/O,
// src/store never reaches up into src/api, src/api imports nothing of src/store (it is handed
// services, and writes through the door, service/tag-admin.ts), src/api reaches src/service
// only through its public surface, and no transport (gRPC, the websocket stream, UDP, the HTTP
// routes) imports another. Layout is Biome's job (biome.json), not ESLint's.
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const ROOT = path.dirname(fileURLToPath(import.meta.url));

/**
 * Node built-ins that only compute: everything else (fs, net, dgram, http, child_process, os, crypto...) touches the
 * world.
 */
const PURE_BUILTINS = new Set([
  'assert',
  'assert/strict',
  'buffer',
  'events',
  'path',
  'path/posix',
  'path/win32',
  'querystring',
  'string_decoder',
  'url',
  'util',
  'util/types',
]);
const BUILTINS = new Set(builtinModules.map((m) => m.replace(/^node:/, '')));

/** The project-relative path an import names, without its extension ('src/errors'); undefined for a package. */
function target(filename, source) {
  if (!source.startsWith('.') && !source.startsWith('/')) return undefined;
  const abs = path.resolve(path.dirname(filename), source);
  return path
    .relative(ROOT, abs)
    .split(path.sep)
    .join('/')
    .replace(/\.(js|ts|mjs|mts)$/, '');
}

const within = (p, dir) => p === dir || p.startsWith(`${dir}/`);

/**
 * idmint/layers: which imports a folder may make. Options (all optional):
 *   inside     every relative import must stay in this folder (e.g. 'src/core');
 *   except     [{ path, typeOnly }]: files outside `inside` that may still be imported ('src/errors');
 *   notInto    folders no import may reach (e.g. ['src/api']); an entry { dir, why } says why of its own;
 *   surface    { dir, files }: imports into `dir` may name only these files (its public surface);
 *   packages   npm packages that may not be imported ('fastify' also bans 'fastify/...'; '@grpc/*' a scope);
 *   ioBuiltins true: Node built-ins other than the pure ones above may not be imported;
 *   builtins   built-ins allowed all the same (e.g. ['crypto'] for a file that only computes with it).
 * Checks import and export declarations, `import()` and `import x = require()`.
 */
/** A notInto entry with its own reason: { dir, why }. */
const NOT_INTO_WITH_WHY = {
  type: 'object',
  additionalProperties: false,
  properties: { dir: { type: 'string' }, why: { type: 'string' } },
  required: ['dir', 'why'],
};

const layers = {
  meta: {
    type: 'problem',
    docs: { description: 'Keep the import direction between the folders of src/' },
    schema: [
      {
        type: 'object',
        additionalProperties: false,
        properties: {
          inside: { type: 'string' },
          except: {
            type: 'array',
            items: {
              type: 'object',
              properties: { path: { type: 'string' }, typeOnly: { type: 'boolean' } },
              required: ['path'],
            },
          },
          notInto: {
            type: 'array',
            items: { anyOf: [{ type: 'string' }, NOT_INTO_WITH_WHY] },
          },
          surface: {
            type: 'object',
            additionalProperties: false,
            properties: { dir: { type: 'string' }, files: { type: 'array', items: { type: 'string' } } },
            required: ['dir', 'files'],
          },
          packages: { type: 'array', items: { type: 'string' } },
          ioBuiltins: { type: 'boolean' },
          builtins: { type: 'array', items: { type: 'string' } },
          why: { type: 'string' },
        },
      },
    ],
    messages: {
      outside: "'{{source}}' is outside {{inside}}: {{why}}",
      into: "'{{source}}' is in {{dir}}: {{why}}",
      surface: "'{{source}}' is not part of the public surface of {{dir}}: {{why}}",
      package: "'{{source}}' may not be imported here: {{why}}",
      builtin: "'{{source}}' does I/O or reaches the machine: {{why}}",
    },
  },
  create(context) {
    const o = context.options[0] ?? {};
    const why = o.why ?? 'see the layers in eslint.config.mjs';
    const bannedPackage = (name) =>
      (o.packages ?? []).some((p) =>
        p.endsWith('/*') ? name.startsWith(p.slice(0, -1)) : name === p || name.startsWith(`${p}/`),
      );
    function check(node, source, typeOnly) {
      if (typeof source !== 'string') return;
      const data = { source, why };
      const rel = target(context.filename, source);
      if (rel === undefined) {
        const bare = source.replace(/^node:/, '');
        if (
          o.ioBuiltins &&
          (source.startsWith('node:') || BUILTINS.has(bare)) &&
          !PURE_BUILTINS.has(bare) &&
          !(o.builtins ?? []).includes(bare)
        ) {
          context.report({ node, messageId: 'builtin', data });
        } else if (bannedPackage(source)) context.report({ node, messageId: 'package', data });
        return;
      }
      const barred = (o.notInto ?? []).map((entry) => (typeof entry === 'string' ? { dir: entry, why } : entry));
      const into = barred.find((entry) => within(rel, entry.dir));
      if (into) return context.report({ node, messageId: 'into', data: { source, dir: into.dir, why: into.why } });
      if (o.surface && within(rel, o.surface.dir) && !o.surface.files.includes(rel)) {
        return context.report({ node, messageId: 'surface', data: { ...data, dir: o.surface.dir } });
      }
      if (
        o.inside &&
        !within(rel, o.inside) &&
        !(o.except ?? []).some((e) => e.path === rel && (typeOnly || !e.typeOnly))
      ) {
        context.report({ node, messageId: 'outside', data: { ...data, inside: o.inside } });
      }
    }
    const typeOnlyImport = (n) =>
      n.importKind === 'type' ||
      (n.specifiers.length > 0 && n.specifiers.every((s) => s.type === 'ImportSpecifier' && s.importKind === 'type'));
    return {
      ImportDeclaration: (n) => check(n.source, n.source.value, typeOnlyImport(n)),
      ExportNamedDeclaration: (n) => n.source && check(n.source, n.source.value, n.exportKind === 'type'),
      ExportAllDeclaration: (n) => check(n.source, n.source.value, n.exportKind === 'type'),
      ImportExpression: (n) => n.source.type === 'Literal' && check(n.source, n.source.value, false),
      TSImportEqualsDeclaration: (n) =>
        n.moduleReference.type === 'TSExternalModuleReference' &&
        check(n.moduleReference, n.moduleReference.expression.value, n.importKind === 'type'),
    };
  },
};

/**
 * What src/api may import of src/service: the issuing door, its options and bulk takes, readiness and the drain, and
 * the admin's services: the write door (tag-admin), its reads, capacity and the debug switches of test mode.
 */
const SERVICE_SURFACE = [
  'src/service/id-service',
  'src/service/id-options',
  'src/service/bulk-take',
  'src/service/readiness',
  'src/service/drain',
  'src/service/capacity',
  'src/service/tag-admin',
  'src/service/admin-reads',
  'src/service/debug-switches',
].sort();

/** src/api is handed services, never a store: a write past the door would go unannounced. */
const NO_STORE = {
  dir: 'src/store',
  why: 'src/api is handed services, never a store: admin writes go through the door (service/tag-admin.ts)',
};

/** The transports of src/api: each parses, calls the service and encodes, and imports no other. */
const TRANSPORTS = ['src/api/grpc', 'src/api/ws', 'src/api/udp', 'src/api/http'];

/** idmint/layers for files of src/api (a transport's folder when given). */
function apiLayers(transport) {
  return [
    'error',
    {
      surface: { dir: 'src/service', files: SERVICE_SURFACE },
      notInto: [NO_STORE, ...(transport ? TRANSPORTS.filter((t) => t !== transport) : [])],
      why: transport
        ? 'a transport parses, calls the service and encodes: what two transports share lives below both (src/service, src/core)'
        : 'src/api calls the service through its public surface, not its internals',
    },
  ];
}

/** Runtime dependencies that talk to the network, a database or a log. */
const IO_PACKAGES = [
  'ioredis',
  'mysql2',
  'bullmq',
  'fastify',
  '@fastify/*',
  'pino',
  'ws',
  '@grpc/*',
  'prom-client',
  '@bull-board/*',
];

export default defineConfig(
  globalIgnores(['dist/', '.data/', '.tools/', 'bench/results/']),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    plugins: { idmint: { rules: { layers } } },
    rules: {
      // `const { a: _a, ...rest } = x` is how the code drops a field from a copy.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // `let self; createServer(() => self.accept()); self = new ...`: const cannot come first.
      // `for (let [a, b] of ranges)` moves a only: one let for the pair reads better.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true, destructuring: 'all' }],
      // prom-client calls a gauge's collect() with the gauge as `this`: self is the owner.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['self'] }],
    },
  },
  {
    // The admin page's scripts run in the browser.
    files: ['src/api/http/admin/page/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['src/core/**'],
    rules: {
      'idmint/layers': [
        'error',
        {
          inside: 'src/core',
          // The error registry is a table of codes with no imports; core names its codes' type.
          except: [{ path: 'src/errors', typeOnly: true }],
          packages: IO_PACKAGES,
          ioBuiltins: true,
          why: 'src/core holds pure ID logic and does no I/O (README, Development)',
        },
      ],
    },
  },
  {
    // The permutation of permuted tags computes AES rounds with node:crypto's cipher (a pure
    // function of the key it is given); nothing else of src/core may reach node:crypto.
    files: ['src/core/permute.ts'],
    rules: {
      'idmint/layers': [
        'error',
        {
          inside: 'src/core',
          packages: IO_PACKAGES,
          ioBuiltins: true,
          builtins: ['crypto'],
          why: 'src/core holds pure ID logic and does no I/O (README, Development)',
        },
      ],
    },
  },
  { files: ['src/api/**'], rules: { 'idmint/layers': apiLayers(undefined) } },
  ...TRANSPORTS.map((t) => ({ files: [`${t}/**`], rules: { 'idmint/layers': apiLayers(t) } })),
  {
    files: ['src/store/**'],
    rules: {
      'idmint/layers': [
        'error',
        { notInto: ['src/api'], why: 'src/store serves the transports in src/api and never calls them' },
      ],
    },
  },
);
