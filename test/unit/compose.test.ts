// docker-compose.yml and the Dockerfile, checked without a Docker engine: the services, their
// health checks and start order, and that the environment and ports they declare are ones
// idmint's configuration accepts and serves on.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';

const ROOT = new URL('../../', import.meta.url);
const read = (f: string) => readFileSync(new URL(f, ROOT), 'utf8');

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  volumes?: string[];
}

const compose = parse(read('docker-compose.yml')) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const { redis, mysql, idmint } = compose.services;

/** Compose's ${VAR:-default} substitution, with nothing set in the environment. */
const substitute = (v: string) => v.replace(/\$\{([A-Z_]+):-([^}]*)\}/g, (_, _name, def: string) => def);

describe('docker-compose.yml', () => {
  it('declares redis, mysql and idmint, each with a health check', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), ['idmint', 'mysql', 'redis']);
    for (const [name, s] of Object.entries(compose.services)) {
      assert.ok(s.healthcheck?.test?.length, `${name} has a health check`);
      assert.equal(s.healthcheck!.test[0], 'CMD', `${name}'s health check runs a command`);
    }
    assert.match(redis.image!, /^redis:7/);
    assert.match(mysql.image!, /^mysql:8/);
  });

  it('starts idmint, built from the repository, once Redis and MySQL are healthy', () => {
    assert.equal(idmint.build, '.');
    assert.ok(existsSync(new URL('Dockerfile', ROOT)));
    assert.deepEqual(idmint.depends_on, {
      redis: { condition: 'service_healthy' },
      mysql: { condition: 'service_healthy' },
    });
  });

  it('gives idmint an environment its configuration accepts, pointing at the two services', () => {
    const env = Object.fromEntries(Object.entries(idmint.environment!).map(([k, v]) => [k, substitute(String(v))]));
    const documented = read('docs/CONFIG.md');
    for (const k of Object.keys(env))
      assert.match(documented, new RegExp(`\\| \`${k}\` \\|`), `${k} is a documented setting`);
    const config = loadConfig(env);
    const r = new URL(config.redisUrl);
    assert.equal(r.hostname, 'redis');
    assert.equal(r.port, '6379');
    const m = new URL(config.mysqlUrl);
    assert.equal(m.hostname, 'mysql');
    assert.equal(decodeURIComponent(m.password), mysql.environment!.MYSQL_ROOT_PASSWORD);
    assert.equal(m.pathname, `/${mysql.environment!.MYSQL_DATABASE}`);
    assert.equal(config.adminTokenGenerated, false, 'the admin token is set (changeable through ADMIN_TOKEN)');
    assert.ok(config.demoTag, 'the quickstart demo tag is created');

    // The published ports are the ones idmint listens on: HTTP over TCP, id_server over UDP, gRPC.
    assert.deepEqual(idmint.ports, [
      `${config.port}:${config.port}`,
      `${config.udpPort}:${config.udpPort}/udp`,
      `${config.grpcPort}:${config.grpcPort}`,
    ]);
    // Its health check asks readiness on that port.
    assert.match(idmint.healthcheck!.test.join(' '), new RegExp(`127\\.0\\.0\\.1:${config.port}/readyz`));
    // docker stop waits for the drain and the shutdown before its SIGKILL.
    const grace = /^(\d+)s$/.exec(idmint.stop_grace_period ?? '');
    assert.ok(grace, `stop_grace_period is given in seconds: ${idmint.stop_grace_period}`);
    assert.ok(
      Number(grace[1]) * 1000 > config.shutdownDrainMs + config.shutdownTimeoutMs,
      'the drain and the shutdown fit before SIGKILL',
    );
  });

  it('runs Redis as idmint needs it: no eviction, no persistence', () => {
    const cmd = redis.command!.join(' ');
    assert.match(cmd, /--maxmemory-policy noeviction/);
    assert.match(cmd, /--save\s+(''|\s)/);
    assert.match(cmd, /--appendonly no/);
  });

  it('keeps MySQL data in a named volume', () => {
    assert.deepEqual(mysql.volumes, ['mysql-data:/var/lib/mysql']);
    assert.ok(compose.volumes && 'mysql-data' in compose.volumes);
  });
});

describe('Dockerfile', () => {
  const df = read('Dockerfile');
  const pkg = JSON.parse(read('package.json')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
    engines: { node: string };
    files: string[];
  };
  // The stages, each from its FROM line to the next one.
  const stages = df.split(/^(?=FROM )/m).filter((s) => s.startsWith('FROM '));
  const build = stages[0] ?? '';
  const runtime = stages[stages.length - 1] ?? '';

  it('builds in a build stage: all dependencies, then npm pack (which compiles dist/)', () => {
    assert.equal(stages.length, 2, 'a build stage and a runtime stage');
    assert.match(build, /^FROM node:[\w.-]+ AS build$/m);
    assert.match(build, /^RUN npm install --no-audit\b/m, 'the build installs dev dependencies (TypeScript) too');
    assert.match(build, /^RUN npm pack\b/m);
    // npm pack builds through prepack and packs what `files` ships.
    assert.match(JSON.parse(read('package.json')).scripts.prepack, /npm run build/);
    for (const f of ['dist/', 'sql/', 'bin/']) assert.ok(pkg.files.includes(f), `the package ships ${f}`);
  });

  it('runs the compiled server with plain node, on production dependencies only', () => {
    assert.match(runtime, /^COPY --from=build \/pkg \.\/$/m, 'takes the packed files from the build stage');
    assert.match(runtime, /^RUN npm install --omit=dev\b/m);
    assert.match(
      runtime,
      /^CMD \["node", "--max-semi-space-size=64", "--min-semi-space-size=64", "--single-threaded-gc", "dist\/cli\.js", "serve"\]$/m,
    );
    assert.doesNotMatch(runtime, /tsx|--import|--loader|src\//, 'no TypeScript loader, no sources in the image');
    assert.ok(!pkg.dependencies.tsx && pkg.devDependencies.tsx, 'tsx is a dev dependency, left out by --omit=dev');
    assert.ok(!pkg.dependencies.typescript, 'typescript is a dev dependency');
  });

  it('installs dependencies with a command that accepts this lockfile', () => {
    // The lockfile leaves out optional per-platform builds the registry lacks, which `npm ci`
    // refuses; `npm install` honours the lockfile for everything it holds.
    for (const stage of stages) {
      assert.match(stage, /^COPY package\.json package-lock\.json \.\/$/m, 'the lockfile is used');
      assert.doesNotMatch(stage, /^RUN npm ci\b/m);
    }
  });

  it('uses a Node version the package requires, in both stages, and exposes the service ports', () => {
    const min = Number(/^>=(\d+)/.exec(pkg.engines.node)?.[1]);
    assert.ok(min >= 22, `engines.node is a current line: ${pkg.engines.node}`);
    for (const stage of stages) {
      const major = Number(/^FROM node:(\d+)/.exec(stage)?.[1]);
      assert.ok(major >= min, `node ${major} satisfies ${pkg.engines.node}`);
    }
    assert.match(runtime, /^EXPOSE 8080 8081\/udp 8082$/m);
    assert.match(runtime, /^USER node$/m, 'does not run as root');
  });
});
