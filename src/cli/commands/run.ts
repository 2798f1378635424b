/**
 * `weft run <workflow> [--input k=v …] [--priority N] [--follow | --json]`: starts a run. With --follow, shows the jobs' states as they change
 * (a table redrawn in place on a terminal, one line per change otherwise), streams the output of every
 * job that runs, and exits 0 when the run succeeds, 1 when it fails or is cancelled.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { WorkflowApiError, type LogChunkView, type WorkflowClient } from '../../client/index.js';
import type { JobView, StatusDocument } from '../../protocol/wire.js';
import {
  action,
  CliError,
  describeError,
  fit,
  formatDuration,
  lines,
  makeClient,
  paintState,
  priorityOption,
  palette,
  serverOption,
  summary,
  transientFailure,
  type Palette,
  type ServerOptions,
} from './common.js';
import { CANCELLED_LATE_LOGS_MS, followJobLogs } from './follow-logs.js';
import { sleep } from '../../util/sleep.js';
import { elapsedSecs, formatAttempt, retryWait, statusLines } from './status.js';
import { terminalLine, terminalText } from '../terminal-text.js';

const POLL_MS = 500;
/** How long the server may stay unreachable (or answer 5xx/408/429) while following before giving up. */
const OUTAGE_LIMIT_MS = 30_000;
/** After the run ends, how long to wait for the last log lines before leaving (above CANCELLED_LATE_LOGS_MS). */
const DRAIN_MS = 5_000;

const TERMINAL_RUN = new Set(['success', 'failed', 'cancelled']);

export function registerRun(program: Command): void {
  program
    .command('run')
    .description('start a run of a workflow and print its number')
    .argument('<workflow>', 'workflow id')
    .option('-i, --input <name=value>', "a value for one of the workflow's inputs (repeat for more)", collectInput)
    .option('-p, --priority <n>', "queue every job of this run with this priority, -100..100 (default: the definition's)", priorityOption)
    .option('-f, --follow', 'show job states and logs until the run ends; exit 1 unless it succeeds')
    .option('--json', 'print the status document of the new run')
    .addOption(serverOption())
    .action(
      action(async (workflow: string, opts: StartOptions & { input?: Record<string, string>; priority?: number }) => {
        const client = makeClient(opts);
        const inputs = opts.input ?? {};
        const given = Object.keys(inputs).length > 0;
        const doc = await client.runWorkflow(workflow, { inputs, priority: opts.priority });
        if (given && doc.run !== null && doc.run.inputs === undefined) {
          process.stderr.write('weft: warning: the server does not know run inputs (an older version); the run started without them\n');
        }
        await reportStart(client, workflow, doc, opts, '');
      }),
    );
}

export interface StartOptions extends ServerOptions {
  follow?: boolean;
  json?: boolean;
}

/** What `run` and `rerun` print once the server started the run; follows it with --follow. */
export async function reportStart(client: WorkflowClient, workflow: string, doc: StatusDocument, opts: StartOptions, detail: string): Promise<void> {
  const run = doc.run_number;
  if (run === null) throw new CliError(`the server started no run of ${workflow}`);
  if (opts.json && opts.follow) throw new CliError('--json and --follow do not go together: --json prints the new run once');
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    return;
  }
  process.stdout.write(`started run ${run} of ${workflow}${detail}\n`);
  if (opts.follow) process.exitCode = await followRun(client, workflow, run, doc);
}

/** `--input name=value`, repeatable; the same name twice is a mistake worth stopping for. */
function collectInput(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected name=value, got '${value}'`);
  const name = value.slice(0, eq);
  if (Object.hasOwn(previous, name)) throw new InvalidArgumentError(`input '${name}' given twice`);
  return { ...previous, [name]: value.slice(eq + 1) };
}

// ------------------------------------------------------------------------------------- display

interface Display {
  /** A new status document (also called on every poll, so a live view can tick). */
  update(doc: StatusDocument): void;
  /** Log text of a job; stderr text goes to stderr. */
  log(jobId: string, data: string, stream?: string): void;
  note(text: string): void;
}

function jobWidth(doc: StatusDocument): number {
  return Math.max(1, ...doc.jobs.map((j) => j.id.length));
}

function logLines(jobId: string, data: string, width: number, p: Palette, stream?: string): string {
  // stderr goes to stderr; on a terminal, where both streams mix, its lines are red as well.
  const prefix = stream === 'stderr' ? palette(process.stderr).red(jobId.padEnd(width)) : p.cyan(jobId.padEnd(width));
  // A job's output keeps its colours but drives nothing else (see terminal-text.ts).
  return lines(terminalText(data))
    .map((l) => `${prefix} | ${stream === 'stderr' ? l : stepHeading(l, p)}\n`)
    .join('');
}

const STEP_LINE = /^::step (\d+\/\d+) (.*)$/;

/** The `::step i/n name` line a `steps:` job prints before each step (README "Workflow definitions"), as a heading. */
function stepHeading(line: string, p: Palette): string {
  const m = STEP_LINE.exec(line);
  return m === null ? line : p.bold(`--- step ${m[1]}: ${m[2]} ---`);
}

function runSummary(doc: StatusDocument, p: Palette): string {
  const created = doc.run ? Date.parse(doc.run.created_at) : NaN;
  const finished = doc.run?.finished_at ? Date.parse(doc.run.finished_at) : NaN;
  const took = Number.isFinite(created) && Number.isFinite(finished) ? ` in ${formatDuration((finished - created) / 1000)}` : '';
  return `run ${doc.run_number} of ${doc.id}: ${paintState(p, doc.status)}${took}\n`;
}

/** Not a terminal: one line per job state change, log lines as they come. */
class LineDisplay implements Display {
  private readonly seen = new Map<string, string>();
  private width = 1;
  constructor(private readonly p: Palette) {}

  update(doc: StatusDocument): void {
    this.width = jobWidth(doc);
    const now = Date.now();
    for (const job of doc.jobs) {
      const key = `${job.state}/${job.attempt}`;
      if (this.seen.get(job.id) === key) continue;
      this.seen.set(job.id, key);
      process.stdout.write(`${this.stateLine(job, now)}\n`);
    }
  }

  private stateLine(job: JobView, now: number): string {
    // Never on a terminal, so never coloured: plain padding lines the columns up.
    const parts = [job.id.padEnd(this.width), job.state.padEnd(9)];
    if (job.state !== 'pending' && job.state !== 'skipped' && job.state !== 'awaiting_approval') parts.push(`attempt ${formatAttempt(job)}`);
    const secs = elapsedSecs(job, now);
    if (secs !== null) parts.push(formatDuration(secs));
    const wait = retryWait(job, now);
    if (wait !== '') parts.push(wait);
    if (job.state === 'running' && job.worker_id) parts.push(`worker ${terminalLine(job.worker_id)}`);
    // README "Approvals": say what the run waits for and how to answer.
    if (job.state === 'awaiting_approval') {
      const message = job.approval?.message ? `: ${terminalLine(summary(terminalText(job.approval.message), 120))}` : '';
      parts.push(`waiting for \`weft approve\` or \`weft reject\`${message}`);
    }
    // README "Concurrency groups": the job another job of its group keeps waiting.
    const holder = job.state === 'queued' ? job.concurrency_holder : undefined;
    if (holder) parts.push(`waiting for group ${terminalLine(job.concurrency_group ?? '')}: ${terminalLine(holder.workflow_id)} #${holder.run_number} ${terminalLine(holder.job_id)} runs`);
    // The error of a failed job, of the attempt a queued retry follows, or why a job was cancelled.
    if (job.error && (job.state === 'failed' || job.state === 'queued' || job.state === 'cancelled')) parts.push(terminalLine(summary(terminalText(job.error), 120)));
    return parts.join('  ').trimEnd();
  }

  log(jobId: string, data: string, stream?: string): void {
    (stream === 'stderr' ? process.stderr : process.stdout).write(logLines(jobId, data, this.width, this.p, stream));
  }

  note(text: string): void {
    process.stderr.write(`weft: ${terminalLine(text)}\n`);
  }
}

/** A terminal: the status table stays at the bottom, redrawn in place; log lines scroll above it. */
class TtyDisplay implements Display {
  private height = 0;
  private doc: StatusDocument | null = null;
  constructor(private readonly p: Palette) {}

  private erase(): void {
    // Back to the first line of the table, then clear to the end of the screen.
    if (this.height > 0) process.stdout.write(`\x1b[${this.height}A\r\x1b[J`);
    this.height = 0;
  }

  private draw(): void {
    if (!this.doc) return;
    const cols = Math.max(20, (process.stdout.columns || 80) - 1);
    // Lines cut to the width, so none wraps and the height stays exact; rows cut to the screen, since
    // the cursor cannot move back above it.
    let rows = ['', ...statusLines(this.doc, this.p)].map((l) => fit(l, cols));
    const maxRows = Math.max(4, (process.stdout.rows || 24) - 2);
    if (rows.length > maxRows) rows = [...rows.slice(0, maxRows - 1), this.p.dim(`… ${rows.length - maxRows + 1} more jobs`)];
    process.stdout.write(`${rows.join('\n')}\n`);
    this.height = rows.length;
  }

  update(doc: StatusDocument): void {
    this.doc = doc;
    this.erase();
    this.draw();
  }

  log(jobId: string, data: string, stream?: string): void {
    this.erase();
    const width = this.doc ? jobWidth(this.doc) : 1;
    (stream === 'stderr' ? process.stderr : process.stdout).write(logLines(jobId, data, width, this.p, stream));
    this.draw();
  }

  note(text: string): void {
    this.erase();
    process.stderr.write(`weft: ${terminalLine(text)}\n`);
    this.draw();
  }
}

// ------------------------------------------------------------------------------------- follow

/** Follows run `run` of `workflowId` to its end; resolves with the exit code. */
export async function followRun(client: WorkflowClient, workflowId: string, run: number, first: StatusDocument): Promise<number> {
  const p = palette(process.stdout);
  const display: Display = process.stdout.isTTY ? new TtyDisplay(p) : new LineDisplay(p);
  const streams = new Map<string, Promise<void>>();
  const abort = new AbortController();

  // One log stream per job, opened as soon as the job has output to show: it runs or ran (it may have
  // started and even finished between two polls), or a retry waits (the failed attempt's lines tell
  // why). Every attempt is shown once, from the first: the server's stream starts at the newest one
  // that logged, so followJobLogs fetches the ones it skipped.
  const openStreams = (doc: StatusDocument) => {
    for (const job of doc.jobs) {
      if (streams.has(job.id)) continue;
      if (job.state !== 'running' && job.started_at_ms === null && job.attempt === 0 && job.error === null) continue;
      const handlers = {
        onChunk: (c: LogChunkView) => {
          if (c.run_number === run) display.log(job.id, c.data, c.stream);
        },
        onAttempt: (n: number) => display.log(job.id, `--- attempt ${formatAttempt({ attempt: n, max_retries: job.max_retries })} ---`),
        onReconnecting: (reason: string) => display.note(`lost the log stream of ${job.id} (${reason}); reconnecting`),
      };
      const follow = { signal: abort.signal, giveUpAfterMs: OUTAGE_LIMIT_MS, fromAttempt: 0, run, lateLogsMs: CANCELLED_LATE_LOGS_MS };
      const task = followJobLogs(client, workflowId, job.id, handlers, follow).then(
        () => undefined,
        (err: unknown) => display.note(`no more logs of ${job.id}: ${describeError(err, client.baseUrl)}`),
      );
      streams.set(job.id, task);
    }
  };

  let doc = first;
  try {
    let outageSince: number | null = null;
    for (;;) {
      display.update(doc);
      openStreams(doc);
      if (TERMINAL_RUN.has(doc.status)) break;
      await sleep(POLL_MS);
      try {
        // This run's own document: with `concurrency`, later runs may start while it goes on (README "How a run works").
        doc = await client.getRun(workflowId, run);
        outageSince = null;
      } catch (err) {
        const reason = transientFailure(err);
        if (reason === null) throw err;
        if (outageSince === null) {
          outageSince = Date.now();
          display.note(
            err instanceof WorkflowApiError ? `the server answered ${reason}; retrying` : `cannot reach the server (${reason}); retrying`,
          );
        } else if (Date.now() - outageSince > OUTAGE_LIMIT_MS) {
          throw err;
        }
      }
    }
  } catch (err) {
    // Open log streams would keep the process alive.
    abort.abort();
    throw err;
  }

  // Every job is terminal, so every stream is about to get its `end`; give them a moment to deliver
  // the last lines, then stop whatever is left.
  const drained = Promise.all(streams.values());
  const timer = setTimeout(() => abort.abort(), DRAIN_MS);
  await drained;
  clearTimeout(timer);
  display.update(doc);
  process.stdout.write(runSummary(doc, p));
  return doc.status === 'success' ? 0 : 1;
}
