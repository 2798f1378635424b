/**
 * Bookkeeping for tests that watch many claimers: every lease handed out (a claim answer that reached
 * a claimer, or a lease row of the store) and the checks over them.
 */

/** One lease handed out: which attempt of which job of which run, to whom, under which lease. */
export interface Handout {
  workflow_id: string;
  run: number;
  job_id: string;
  attempt: number;
  lease_id: string;
  /** The claimer that got it (worker id). */
  claimer: string;
  /** Where it was seen: `claim`, `claim-batch`, `report-batch`, `worker log`, … */
  via: string;
  /** When it was seen (epoch ms), as far as the recorder knows. */
  at: number;
}

export const attemptKey = (h: { workflow_id: string; run: number; job_id: string; attempt: number }) =>
  `${h.workflow_id}#${h.run}/${h.job_id}@${h.attempt}`;

/**
 * Every (workflow, run, job, attempt) handed out more than once, and every lease id handed out more
 * than once, described for an assertion message. Empty when each attempt went to exactly one claimer.
 */
export function duplicateHandouts(handouts: readonly Handout[]): string[] {
  const problems: string[] = [];
  const byAttempt = new Map<string, Handout>();
  const byLease = new Map<string, Handout>();
  const show = (h: Handout) => `${h.claimer} via ${h.via} (lease ${h.lease_id})`;
  for (const h of handouts) {
    const key = attemptKey(h);
    const prev = byAttempt.get(key);
    if (prev) problems.push(`${key} handed out twice: to ${show(prev)} and to ${show(h)}`);
    else byAttempt.set(key, h);
    const sameLease = byLease.get(h.lease_id);
    if (sameLease && sameLease !== prev) problems.push(`lease ${h.lease_id} handed out twice: ${attemptKey(sameLease)} and ${key}`);
    else byLease.set(h.lease_id, h);
  }
  return problems;
}

/** A lease row as the store keeps it (leases table). */
export interface LeaseRow {
  lease_id: string;
  workflow_id: string;
  run_number: number;
  job_id: string;
  attempt: number;
  worker_id: string;
  state: string;
  granted_at_ms: number;
}

/**
 * Compares what the claimers saw with the store's own lease rows:
 * - per attempt at most one lease that was not handed back (`released` leases never reached anyone);
 * - every handout seen by a claimer is a lease row of that same attempt and worker;
 * - a lease row no claimer saw (its answer was lost) must have expired: nobody could report on it.
 * Returns the problems found, described.
 */
export function compareWithLeaseRows(handouts: readonly Handout[], rows: readonly LeaseRow[]): string[] {
  const problems: string[] = [];
  const live = rows.filter((r) => r.state !== 'released');
  const perAttempt = new Map<string, LeaseRow[]>();
  for (const r of live) {
    const key = attemptKey({ workflow_id: r.workflow_id, run: r.run_number, job_id: r.job_id, attempt: r.attempt });
    perAttempt.set(key, [...(perAttempt.get(key) ?? []), r]);
  }
  for (const [key, rs] of perAttempt) {
    if (rs.length > 1) problems.push(`${key} has ${rs.length} leases in the store: ${rs.map((r) => `${r.lease_id} (${r.worker_id}, ${r.state})`).join(', ')}`);
  }
  const byId = new Map(rows.map((r) => [r.lease_id, r]));
  const seen = new Set<string>();
  for (const h of handouts) {
    seen.add(h.lease_id);
    const r = byId.get(h.lease_id);
    if (!r) {
      problems.push(`${attemptKey(h)}: lease ${h.lease_id} handed to ${h.claimer} is not in the store`);
      continue;
    }
    const rowKey = attemptKey({ workflow_id: r.workflow_id, run: r.run_number, job_id: r.job_id, attempt: r.attempt });
    if (rowKey !== attemptKey(h) || r.worker_id !== h.claimer) {
      problems.push(`lease ${h.lease_id}: handed out as ${attemptKey(h)} to ${h.claimer}, stored as ${rowKey} for ${r.worker_id}`);
    }
    if (r.state === 'released') problems.push(`lease ${h.lease_id} reached ${h.claimer} but the store says it was handed back (released)`);
  }
  for (const r of live) {
    if (!seen.has(r.lease_id) && r.state !== 'expired') {
      problems.push(
        `lease ${r.lease_id} (${r.workflow_id}#${r.run_number}/${r.job_id}@${r.attempt}, ${r.worker_id}) reached no claimer but is ${r.state}`,
      );
    }
  }
  return problems;
}
