import { formatTraceparent, parseTraceparent, preciseNowMs, randomSpanId, randomTraceId, type SpanAttribute, type SpanSink } from '../domain/trace-context.js';
import { ShellCommandError } from './shell.js';
import { prepareHandler, type JobHandler } from './worker-api.js';

/**
 * `weft worker`'s span around each command (README "Traces (OpenTelemetry)"), when the worker itself
 * exports traces. The claim answer's TRACEPARENT names the attempt's span on the server; the command's
 * span is its child, and the command gets a TRACEPARENT naming the command's span instead, so what the
 * job's own instrumented code records hangs below it. A job without a valid TRACEPARENT (a server
 * that does not trace) gets a trace of its own; one its caller chose not to sample is left alone.
 *
 * The span's status says how the command ended (an exit code, a signal, an abort), never its error
 * text: that may carry a secret's value, which the server hides and an OTLP collector would not.
 */
export function traceCommands(handler: JobHandler, sink: SpanSink): JobHandler {
  const spanned: JobHandler = async (job, ctx) => {
    const parent = parseTraceparent(job.env?.TRACEPARENT);
    if (parent && !parent.sampled) return handler(job, ctx);
    const traceId = parent?.traceId ?? randomTraceId();
    const spanId = randomSpanId();
    const traced = { ...job, env: { ...(job.env ?? {}), TRACEPARENT: formatTraceparent(traceId, spanId) } };
    const startMs = preciseNowMs();
    const attributes: Record<string, SpanAttribute> = {
      'weft.workflow.id': job.workflow_id,
      'weft.job.id': job.job_id,
      'weft.job.attempt': job.attempt,
      'weft.worker.id': ctx.workerId,
    };
    if (job.run_number !== undefined) attributes['weft.run.number'] = job.run_number;
    let error: string | undefined;
    try {
      const out = await handler(traced, ctx);
      attributes['weft.job.result'] = 'success';
      return out;
    } catch (err) {
      attributes['weft.job.result'] = ctx.signal.aborted ? 'aborted' : 'failure';
      if (err instanceof ShellCommandError) {
        if (err.exitCode !== null) attributes['process.exit.code'] = err.exitCode;
        error = err.exitCode !== null ? `command exited with code ${err.exitCode}` : `command was killed by signal ${err.signal ?? 'unknown'}`;
      } else {
        error = ctx.signal.aborted ? 'command aborted' : 'command failed';
      }
      throw err;
    } finally {
      sink.export([
        {
          traceId,
          spanId,
          ...(parent ? { parentSpanId: parent.spanId } : {}),
          name: `command ${job.job_id}`,
          kind: 'internal',
          startMs,
          endMs: Math.max(startMs, preciseNowMs()),
          attributes,
          ...(error !== undefined ? { error } : {}),
        },
      ]);
    }
  };
  return Object.assign(spanned, { prepare: () => prepareHandler(handler) });
}
