import { leaseExpiresAt } from '../../domain/lease.js';
import type { Claimed, JobChange, StoreClaim } from '../store.js';
import { newLease, toJob, type Row } from '../rows.js';
import { change } from '../changes.js';
import { QUERIES } from './queries.js';
import { statement, transaction, writeStatement, type Sql } from './tx.js';
import { Coalescer } from './coalesce.js';

/**
 * Claiming jobs (one statement, QUERIES.claim) and handing leases back unused. Claims with the same
 * label keys that arrive together share that statement (coalesce.ts, docs/performance.md
 * "PostgreSQL"); claims with other keys go in statements of their own.
 */

export interface ClaimCall {
  req: StoreClaim;
  /** Jobs it may take: at most `max`, and no more than it brought lease ids for. */
  max: number;
  keys: string[];
  expires: number;
}

const claimers = new WeakMap<Sql, Coalescer<ClaimCall, Row[]>>();

/** How many jobs one claim statement hands out at most (claims asking more go alone). */
const SLOTS_PER_STATEMENT = 256;

/**
 * Claim statements out at once per set of label keys: one, so that every claim arriving while it is
 * out goes in the next (the bench measured 1.16 rather than 1.47 transactions per job on the spec
 * path with two; docs/performance.md "PostgreSQL"). A claim hardly waits on a row lock (its jobs are
 * taken SKIP LOCKED); claims with other label keys are not held up by it.
 */
const CLAIMS_IN_FLIGHT = 1;

function claimer(sql: Sql): Coalescer<ClaimCall, Row[]> {
  let c = claimers.get(sql);
  if (!c) {
    c = new Coalescer((batch) => claimTogether(sql, batch), {
      maxInFlight: CLAIMS_IN_FLIGHT,
      maxWeight: SLOTS_PER_STATEMENT,
      weight: (call) => call.max,
    });
    claimers.set(sql, c);
  }
  return c;
}

/** One claim statement for calls with the same label keys, and how to share out what it returns. */
export interface ClaimStatement {
  text: string;
  params: unknown[];
  /** The rows the statement returned, as each call's jobs, in the order of the calls. */
  answers(rows: readonly Row[]): Row[][];
}

async function claimTogether(sql: Sql, batch: readonly ClaimCall[]): Promise<Row[][]> {
  const s = claimStatement(batch);
  return s.answers(await writeStatement(sql, s.text, s.params));
}

/**
 * One QUERIES.claim (QUERIES.claimAcrossKeys for several keys) for claims with the same label keys: each has a run of slots as long as its
 * `max`, in arrival order, and takes the jobs that fall in its slots. The candidates are those
 * claimable at the earliest claimer's time, so no claimer gets a job not yet ready at its own.
 */
export function claimStatement(batch: readonly ClaimCall[]): ClaimStatement {
  const slots = { leaseIds: [] as string[], workers: [] as string[], ttls: [] as number[], expires: [] as number[], tokens: [] as Array<string | null>, nows: [] as number[] };
  const owner: number[] = [];
  const seen = new Map<string, { labels: string; now: number; always: boolean }>();
  batch.forEach((call, i) => {
    const { req } = call;
    for (let k = 0; k < call.max; k++) {
      slots.leaseIds.push(req.lease_ids[k]!);
      slots.workers.push(req.worker_id);
      slots.ttls.push(req.ttl_secs);
      slots.expires.push(call.expires);
      slots.tokens.push(req.token_name ?? null);
      slots.nows.push(req.now_ms);
      owner.push(i);
    }
    // A worker claiming twice in one statement is recorded as its later claim would have left it;
    // unless all its claims are retries that take nothing (StoreClaim.retry).
    const always = !req.retry || (seen.get(req.worker_id)?.always ?? false);
    seen.delete(req.worker_id);
    seen.set(req.worker_id, { labels: JSON.stringify(req.worker_labels), now: req.now_ms, always });
  });
  const workers = [...seen.keys()].sort();
  const text = batch[0]!.keys.length === 1 ? QUERIES.claim : QUERIES.claimAcrossKeys;
  const params = [
    batch[0]!.keys,
    Math.min(...batch.map((c) => c.req.now_ms)),
    owner.length,
    slots.leaseIds,
    slots.workers,
    slots.ttls,
    slots.expires,
    slots.tokens,
    slots.nows,
    workers,
    workers.map((w) => seen.get(w)!.labels),
    workers.map((w) => seen.get(w)!.now),
    workers.map((w) => (seen.get(w)!.always ? 1 : 0)),
  ];
  return {
    text,
    params,
    answers(rows) {
      const answers: Row[][] = batch.map(() => []);
      for (const r of rows) answers[owner[(r.n as number) - 1]!]!.push(r);
      return answers;
    },
  };
}

/** The one-statement part of a claim, sharing its statement with the claims of its label keys that arrive together. */
export function takeTogether(sql: Sql, call: ClaimCall): Promise<Row[]> {
  return claimer(sql).submit(JSON.stringify(call.keys), call);
}

/**
 * Hands out up to `max` claimable jobs: the one-statement claim (by `take`; takeTogether unless the
 * claim must go after something, see leases.ts claimAfterCompletes), then, if it left room, the jobs
 * of capped matrix groups and of concurrency groups.
 */
export async function claim(sql: Sql, req: StoreClaim, take: (call: ClaimCall) => Promise<Row[]> = (call) => takeTogether(sql, call)): Promise<Claimed[]> {
  const now = req.now_ms;
  const expires = leaseExpiresAt(now, req.ttl_secs);
  const max = Math.max(0, Math.min(req.max, req.lease_ids.length));
  const keys = [...new Set(req.label_keys)].sort();
  const rows = await take({ req, max, keys, expires });
  if (rows.length < max) {
    const groups = await statement(sql, QUERIES.claimableGroups, [keys, now, GROUPS_PER_CLAIM]);
    const matrix = groups.filter((g) => g.kind === 'matrix');
    const concurrency = groups.filter((g) => g.kind === 'concurrency').map((g) => g.concurrency_group as string);
    if (matrix.length > 0) rows.push(...(await claimCapped(sql, req, matrix, max - rows.length, req.lease_ids.slice(rows.length), expires)));
    if (concurrency.length > 0 && rows.length < max) {
      rows.push(...(await claimInJobGroups(sql, req, concurrency, max - rows.length, req.lease_ids.slice(rows.length), expires)));
    }
  }
  return rows.map((r) => {
    const job = toJob(r);
    return { job, lease: newLease(job, job.lease_id!, req.worker_id, req.ttl_secs, now, expires, req.token_name ?? null) };
  });
}

/** How many groups of each kind (capped matrix groups, concurrency groups) one claim looks at. */
const GROUPS_PER_CLAIM = 8;

/**
 * Instances of matrix groups with a max_parallel (README "Matrix, fan-out and artifacts"), which the
 * one-statement claim leaves out: a statement's snapshot cannot see what a concurrent claim takes, so
 * each group is claimed under a transaction-scoped advisory lock, counting its running instances in a
 * statement sent after the lock is held (READ COMMITTED: a new snapshot, which sees every claim of the
 * group that committed before). Groups in a fixed order, so two claims never wait for each other in turn.
 */
async function claimCapped(sql: Sql, req: StoreClaim, groups: Row[], room: number, leaseIds: readonly string[], expires: number): Promise<Row[]> {
  const keys = [...new Set(req.label_keys)];
  groups.sort((a, b) => groupKey(a).localeCompare(groupKey(b)));
  return transaction(sql, async (q) => {
    const out: Row[] = [];
    for (const g of groups) {
      if (out.length >= room) break;
      const at = [g.workflow_id, g.run_number, g.group_id];
      await q(QUERIES.lockGroup, at);
      const [{ n }] = (await q(QUERIES.groupRunning, at)) as [{ n: number }];
      const limit = Math.min(room - out.length, (g.max_parallel as number) - n);
      if (limit <= 0) continue;
      const rows = await q(QUERIES.claimCapped, [
        ...at, keys, req.now_ms, limit, leaseIds.slice(out.length), req.worker_id, req.ttl_secs, expires, req.token_name ?? null,
      ]);
      out.push(...rows);
    }
    return out;
  });
}

/**
 * Jobs of concurrency groups (README "Concurrency groups"), which the other claims leave out: at most
 * one job of a group runs, across every workflow and server. Each group is claimed in a transaction
 * of its own under a transaction-scoped advisory lock, checking that none of its jobs runs in a
 * statement sent after the lock is held (READ COMMITTED: a new snapshot, which sees every claim of the
 * group that committed before); no other path makes a job of a group `running`. A job that is also a
 * capped matrix instance takes its matrix group's lock next, always after the one group lock this
 * transaction holds, so two claims never wait for each other in turn.
 */
async function claimInJobGroups(
  sql: Sql,
  req: StoreClaim,
  groups: string[],
  room: number,
  leaseIds: readonly string[],
  expires: number,
): Promise<Row[]> {
  const keys = [...new Set(req.label_keys)];
  const out: Row[] = [];
  for (const group of groups.sort()) {
    if (out.length >= room) break;
    const rows = await transaction(sql, async (q) => {
      await q(QUERIES.lockJobGroup, [group]);
      const [{ busy }] = (await q(QUERIES.jobGroupBusy, [group])) as [{ busy: boolean }];
      if (busy) return [];
      const [first] = await q(QUERIES.firstInJobGroup, [group, keys, req.now_ms]);
      if (!first) return [];
      if (first.max_parallel !== null) {
        const at = [first.workflow_id, first.run_number, first.group_id];
        await q(QUERIES.lockGroup, at);
        const [{ n }] = (await q(QUERIES.groupRunning, at)) as [{ n: number }];
        if (n >= (first.max_parallel as number)) return [];
      }
      return q(QUERIES.claimJobOfGroup, [first.row_id, req.now_ms, leaseIds.slice(out.length), req.worker_id, req.ttl_secs, expires, req.token_name ?? null]);
    });
    out.push(...rows);
  }
  return out;
}

function groupKey(g: Row): string {
  return `${g.workflow_id as string}/${g.run_number as number}/${g.group_id as string}`;
}

/** See QUERIES.releaseLeases. */
export async function releaseLeases(sql: Sql, leaseIds: readonly string[]): Promise<JobChange[]> {
  if (leaseIds.length === 0) return [];
  return (await writeStatement(sql, QUERIES.releaseLeases, [leaseIds]))
    .sort((a, b) => (a.row_id as number) - (b.row_id as number))
    .map((r) => change(r as unknown as JobChange));
}
