// OpenAPI for every HTTP route, generated from the same route schemas that validate requests
// (@fastify/swagger), browsable at /docs and as JSON at /docs/json (@fastify/swagger-ui, served
// from the package: no CDN). Must be registered before the routes it describes.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export async function registerDocs(app: FastifyInstance, version: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'idmint',
        description:
          'Distributed ID dispenser: segment, snowflake and rule IDs. Errors are {"error":{"code","message"}}; see docs/API.md.',
        version,
      },
      components: {
        securitySchemes: { admin: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' } },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
}
