import { randomBytes } from 'node:crypto';

/**
 * Trace context (README "Traces (OpenTelemetry)"): W3C `traceparent` values, and a finished span as a
 * plain record. The server, its HTTP layer and the worker describe their spans with these records; only
 * the process wiring that exports them (src/runtime/telemetry.ts) loads the OpenTelemetry packages,
 * and only when an OTLP endpoint is configured.
 */

export type SpanAttribute = string | number | boolean | readonly string[];

/** A finished span. Times are epoch milliseconds (fractions allowed). */
export interface SpanRecord {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** 16 lowercase hex digits, not all zero. */
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: 'internal' | 'server';
  startMs: number;
  endMs: number;
  attributes: Record<string, SpanAttribute>;
  /** Absent: unset (OpenTelemetry's default for what did not fail). */
  error?: string;
}

/** Where finished spans go: the OTLP exporter when tracing is on. Never throws, never waits. */
export interface SpanSink {
  export(spans: readonly SpanRecord[]): void;
}

export interface TraceParent {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** version-traceid-parentid-flags; a later version may append fields after a dash (W3C Trace Context 3.2). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** `00-<trace id>-<span id>-01` (sampled) or `…-00`. */
export function formatTraceparent(traceId: string, spanId: string, sampled = true): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

/**
 * A `traceparent` value as W3C Trace Context reads it, or null for anything else: wrong shape,
 * version ff, extra fields on version 00, an all-zero id. A job's env and a request's header are
 * anyone's text, so nothing but this shape is trusted.
 */
export function parseTraceparent(value: unknown): TraceParent | null {
  if (typeof value !== 'string' || value.length > 512) return null;
  const m = TRACEPARENT.exec(value.trim());
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

export function randomTraceId(): string {
  for (;;) {
    const id = randomBytes(16).toString('hex');
    if (id !== ZERO_TRACE) return id;
  }
}

export function randomSpanId(): string {
  for (;;) {
    const id = randomBytes(8).toString('hex');
    if (id !== ZERO_SPAN) return id;
  }
}

/** Epoch milliseconds with the sub-millisecond part of the monotonic clock, for span times. */
export function preciseNowMs(): number {
  return performance.timeOrigin + performance.now();
}
