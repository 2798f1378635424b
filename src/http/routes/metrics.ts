import type { FastifyInstance } from 'fastify';
import type { AppMetrics } from '../metrics.js';

/** GET /metrics: Prometheus text format (README "Metrics"). */
export function metricsRoutes(app: FastifyInstance, metrics: AppMetrics): void {
  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics (text exposition format)',
        description:
          'Jobs by state and label set, claims, completions, failures, retries, expiries, timeouts, durations, HTTP, streams, waiters, ' +
          'store commits and Node process series (README "Metrics").',
        tags: ['service'],
        docs: {
          answers: { 200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain; version=0.0.4': { schema: { type: 'string' } } } } },
        },
      },
    },
    async (_req, reply) => {
      const text = await metrics.registry.metrics();
      return reply.type(metrics.registry.contentType).send(text);
    },
  );
}
