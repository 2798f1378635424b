import type { Logger } from 'pino';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { SpanRecord, SpanSink } from '../domain/trace-context.js';
import { VERSION } from '../version.js';

/**
 * The OpenTelemetry trace export (README "Traces (OpenTelemetry)"): on only when an OTLP endpoint for
 * traces is configured, through the standard variables the official exporter reads itself
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, …;
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES for the resource). Off, nothing is imported: the
 * packages are loaded here, by dynamic import, only once tracing is on.
 *
 * Spans reach the exporter as ReadableSpan objects built from weft's span records, through the SDK's
 * BatchSpanProcessor (batching, its queue bound, the flush on shutdown). Not through the SDK's Tracer:
 * its spans start and end in the process that made them, with ids from an IdGenerator that cannot be
 * told which id a given span is to have. A run's or an attempt's span is made from the store's records
 * by whichever server sees it end, with ids derived from the run (src/engine/trace-spans.ts): that is a
 * finished span described after the fact, which is what a ReadableSpan is. An IdGenerator fed the next
 * id through shared state before each startSpan would be the same thing, less directly.
 */

export interface Telemetry extends SpanSink {
  /** Exports what is still buffered, then stops the exporter. */
  shutdown(): Promise<void>;
}

/** Whether traces are to be exported: an OTLP traces endpoint is set and the SDK is not turned off. */
export function tracesConfigured(env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  if ((env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase() === 'none') return false;
  return (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim() !== '' || (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '').trim() !== '';
}

/**
 * Starts the exporter when traces are configured; null otherwise, having loaded nothing.
 * `serviceName` is the default of `service.name` (OTEL_SERVICE_NAME wins).
 */
export async function startTelemetry(env: NodeJS.ProcessEnv, serviceName: string, log: Logger): Promise<Telemetry | null> {
  if (!tracesConfigured(env)) return null;
  const [api, sdk, otlp, resources, semconv] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  // The exporter reports failed exports through the API's diagnostic logger: into weft's log, as warnings.
  const warn = (message: string, ...args: unknown[]) => log.warn({ detail: args.length > 0 ? args.map(String).join(' ') : undefined }, `OpenTelemetry: ${message}`);
  api.diag.setLogger({ error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} }, api.DiagLogLevel.WARN);

  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ [semconv.ATTR_SERVICE_NAME]: serviceName, [semconv.ATTR_SERVICE_VERSION]: VERSION }))
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, merged last so that they win.
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const exporter = new otlp.OTLPTraceExporter();
  const processor = new sdk.BatchSpanProcessor(exporter);
  const scope = { name: 'weft', version: VERSION };
  const sampled = api.TraceFlags.SAMPLED;

  const hr = (ms: number): [number, number] => {
    const whole = Math.floor(ms);
    const secs = Math.floor(whole / 1000);
    return [secs, (whole - secs * 1000) * 1_000_000 + Math.min(999_999, Math.round((ms - whole) * 1_000_000))];
  };
  const toReadable = (s: SpanRecord): ReadableSpan => {
    const context = { traceId: s.traceId, spanId: s.spanId, traceFlags: sampled };
    return {
      name: s.name,
      kind: s.kind === 'server' ? api.SpanKind.SERVER : api.SpanKind.INTERNAL,
      spanContext: () => context,
      ...(s.parentSpanId ? { parentSpanContext: { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: sampled, isRemote: true } } : {}),
      startTime: hr(s.startMs),
      endTime: hr(s.endMs),
      duration: hr(Math.max(0, s.endMs - s.startMs)),
      status: s.error !== undefined ? { code: api.SpanStatusCode.ERROR, message: s.error } : { code: api.SpanStatusCode.UNSET },
      attributes: Object.fromEntries(Object.entries(s.attributes).map(([k, v]) => [k, Array.isArray(v) ? [...(v as string[])] : v])),
      links: [],
      events: [],
      ended: true,
      resource,
      instrumentationScope: scope,
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    } as ReadableSpan;
  };

  log.info({ service_name: env.OTEL_SERVICE_NAME?.trim() || serviceName }, 'exporting traces over OTLP/HTTP (README "Traces (OpenTelemetry)")');
  let stopped = false;
  return {
    export(spans) {
      if (stopped) return;
      for (const s of spans) {
        try {
          processor.onEnd(toReadable(s));
        } catch (err) {
          log.warn({ err, span: s.name }, 'a span could not be handed to the exporter');
        }
      }
    },
    async shutdown() {
      if (stopped) return;
      stopped = true;
      await processor.shutdown().catch((err: unknown) => log.warn({ err }, 'the last spans could not be exported'));
    },
  };
}
