/** Result rows, the markdown table and bench/results.json. */
import type { Section, StoreKind } from './settings.js';
import { median, round } from './util.js';

export type RowStatus = 'ok' | 'unsupported' | 'skipped' | 'error';

export interface Row {
  /** Stable machine id, e.g. `spec.sqlite` or `backlog.postgres.1000000`. */
  id: string;
  name: string;
  section: Section;
  store: StoreKind | null;
  status: RowStatus;
  /** Why a row is not ok, or a caveat about how it was measured. */
  note: string | null;
  jobs_per_sec: number | null;
  ratio_to_ceiling: number | null;
  /** The latency the p50/p99 columns show, and what it measures. */
  latency: { what: string; p50_ms: number | null; p99_ms: number | null } | null;
  /** Row-specific summary figures (first-job latency, RSS, …), shown in the notes column. */
  summary: Record<string, unknown>;
  /** Raw figures of every repetition. */
  raw: unknown[];
}

export function emptyRow(id: string, name: string, section: Section, store: StoreKind | null): Row {
  return { id, name, section, store, status: 'ok', note: null, jobs_per_sec: null, ratio_to_ceiling: null, latency: null, summary: {}, raw: [] };
}

const num = (x: number | null | undefined, digits: number) => (x === null || x === undefined ? '—' : x.toFixed(digits));

function bytes(x: unknown): string {
  return typeof x === 'number' ? `${(x / 1024 / 1024).toFixed(0)} MB` : '—';
}

/** Short human notes from a row's summary; the full figures are in results.json. */
function notes(row: Row): string {
  const parts: string[] = [];
  if (row.status !== 'ok') parts.push(row.status === 'unsupported' ? `not supported by this server${row.note ? ` (${row.note})` : ''}` : `${row.status}: ${row.note ?? ''}`);
  else if (row.note) parts.push(row.note);
  if (row.latency && row.status === 'ok') parts.push(row.latency.what);
  const s = row.summary;
  if (typeof s.first_job_ms === 'number') parts.push(`first job ${s.first_job_ms.toFixed(1)} ms`);
  if (typeof s.fan_in_ms === 'number') parts.push(`fan-in ${s.fan_in_ms.toFixed(1)} ms`);
  if (typeof s.all_claimed_ms === 'number') parts.push(`all ${s.fan_width} claimed after ${s.all_claimed_ms.toFixed(1)} ms`);
  if (typeof s.wall_ms === 'number') parts.push(`whole DAG ${s.wall_ms.toFixed(0)} ms`);
  if (s.rss_idle_bytes !== undefined) parts.push(`RSS idle ${bytes(s.rss_idle_bytes)}, after ${bytes(s.rss_after_bytes)}, peak ${bytes(s.hwm_bytes)}`);
  else if (s.server_peak_rss_bytes !== undefined) parts.push(`server peak RSS ${bytes(s.server_peak_rss_bytes)}`);
  if (typeof s.seed_ms === 'number' && row.section === 'backlog') parts.push(`seeded in ${(s.seed_ms / 1000).toFixed(1)} s`);
  if (typeof s.reps === 'number' && s.reps > 1) parts.push(`median of ${s.reps}`);
  if (typeof s.errors === 'number' && s.errors > 0) parts.push(`${s.errors} request errors`);
  if (s.timed_out === true && !row.note) parts.push('stopped at the time budget');
  return parts.join('; ').replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/**
 * Puts a row's repetitions in: the raw figures (with the failures), and the median jobs/s. Answers
 * false when there is nothing more to fill in: the row was skipped or unsupported, or no repetition
 * could be measured (the row is then an error naming why).
 */
export function settleReps(row: Row, reps: ReadonlyArray<{ jobs_per_sec: number | null }>, failures: readonly string[]): boolean {
  row.raw = failures.length ? [...reps, { failures }] : [...reps];
  if (row.status !== 'ok') return false;
  if (reps.length === 0) {
    row.status = 'error';
    row.note = failures.join('; ');
    return false;
  }
  const mid = median(reps.map((r) => r.jobs_per_sec));
  row.jobs_per_sec = mid === null ? null : round(mid, 1);
  return true;
}

export function markdownTable(rows: readonly Row[]): string {
  const out = ['| Row | jobs/s | × ceiling | p50 ms | p99 ms | Notes |', '|---|---:|---:|---:|---:|---|'];
  for (const r of rows) {
    const lat = r.status === 'ok' ? r.latency : null;
    out.push(
      `| ${r.name} | ${num(r.jobs_per_sec, 0)} | ${num(r.ratio_to_ceiling, 3)} | ${num(lat?.p50_ms, 2)} | ${num(lat?.p99_ms, 2)} | ${notes(r)} |`,
    );
  }
  return out.join('\n');
}
