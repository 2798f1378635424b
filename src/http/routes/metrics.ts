import type { FastifyInstance } from 'fastify';
import type { AppMetrics } from '../metrics.js';

/** GET /metrics: Prometheus text format (README "Metrics"). */
export function metricsRoutes(app: FastifyInstance, metrics: AppMetrics): void {
  app.get('/metrics', async (_req, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
}
