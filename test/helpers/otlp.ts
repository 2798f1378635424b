/**
 * A local OTLP/HTTP receiver for tests (README "Traces (OpenTelemetry)"): a plain node HTTP server
 * that takes what the official exporter posts to /v1/traces (OTLP JSON, its default encoding) and
 * keeps every span, flattened with its resource's service name and its attributes as plain values.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind number: 1 internal, 2 server. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
}

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans: ReceivedSpan[];
  /** Every request that came in, whatever its path. */
  requests: Array<{ method: string; path: string; contentType: string }>;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value: AnyValue };

function plain(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(plain);
  return undefined;
}

const attrs = (kvs: KeyValue[] | undefined): Record<string, unknown> => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, plain(kv.value)]));
const ms = (nanos: string | number): number => Number(BigInt(nanos) / 1000n) / 1000;

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', path: req.url ?? '', contentType: String(req.headers['content-type'] ?? '') });
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as {
          resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: any[] }> }>;
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attrs(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                kind: s.kind,
                startMs: ms(s.startTimeUnixNano),
                endMs: ms(s.endTimeUnixNano),
                attributes: attrs(s.attributes),
                statusCode: s.status?.code ?? 0,
                statusMessage: s.status?.message ?? '',
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
