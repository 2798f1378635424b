/**
 * Workflows calling workflows (calls.ts; README "Workflows calling workflows"): the calls between
 * workflows a save checks and keeps, a called workflow's run started for its calling job and that
 * job's end, and what the engine's passes look for. Part of QUERIES (queries.ts, which states the
 * rules every statement follows); parameters are listed above each statement.
 */
import { PENDING_BELOW } from './condition-queries.js';
import { RUN_QUERIES } from './run-queries.js';

/**
 * `statement` (a WITH whose last part is `tail`) with one more CTE before that part: a statement with
 * data-modifying CTEs cannot itself be nested in a CTE.
 */
function withCte(statement: string, tail: string, cte: string): string {
  if (!statement.endsWith(tail)) throw new Error(`statement does not end with "${tail}"`);
  return `${statement.slice(0, -tail.length).trimEnd()}, ${cte}\n    ${tail}`;
}

export const CALL_QUERIES = {
  /**
   * saveWorkflow of a definition that calls nothing, in one statement as before: a workflow that
   * called others before this save loses those calls with it. Parameters as saveWorkflow.
   */
  saveWorkflowCallingNothing: withCte(
    RUN_QUERIES.saveWorkflow,
    'SELECT created FROM saved',
    'gone AS (DELETE FROM workflow_calls WHERE caller_id = $1 AND EXISTS (SELECT 1 FROM saved))',
  ),
  /**
   * Serialises the saves of definitions that call workflows until COMMIT, so that the calls each one
   * checks (a statement after the lock, a new snapshot) include every call an earlier save made: two
   * saves cannot each pass alone and together close a cycle. No parameters.
   */
  lockCalls: `SELECT pg_advisory_xact_lock(hashtext('weft.calls'))`,
  /** Saved calls from these workflows or to those. $1 callers (text[]), $2 callees (text[]) */
  callEdges: `SELECT caller_id, callee_id FROM workflow_calls WHERE caller_id = ANY($1::text[])
    UNION SELECT caller_id, callee_id FROM workflow_calls WHERE callee_id = ANY($2::text[])`,
  /** $1 caller */
  deleteCallEdges: `DELETE FROM workflow_calls WHERE caller_id = $1`,
  /** $1 caller, $2 callees (text[]) */
  insertCallEdges: `INSERT INTO workflow_calls (caller_id, callee_id) SELECT $1, c FROM unnest($2::text[]) AS c ON CONFLICT DO NOTHING`,
  /** Workflows that call another, through workflow_calls' primary key. $1 limit */
  callingWorkflows: `SELECT DISTINCT caller_id FROM workflow_calls ORDER BY caller_id LIMIT $1::int`,
  /** $1 workflow id: whether it exists (a create refuses an id taken before checking its calls). */
  workflowExists: `SELECT 1 FROM workflows WHERE id = $1`,
  /**
   * Calling jobs ready to start their child: a range read of jobs_claim for the call label key, which
   * no claim ever reads. $1 call label key, $2 now, $3 limit
   */
  queuedCalls: `SELECT * FROM jobs WHERE status = 'queued' AND label_key = $1 AND ready_at_ms <= $2::bigint
    ORDER BY priority DESC, ready_at_ms, row_id LIMIT $3::int`,
  /**
   * Child runs still active whose calling job does not run on them any more, and that no cancel
   * reached yet (one that spared its always() jobs has them marked run_cancelled), through runs_children
   * and, per run, jobs_by_run. $1 limit
   */
  orphanedChildRuns: `SELECT r.* FROM runs r
    WHERE r.parent_workflow_id IS NOT NULL AND r.status IN ('running', 'queued')
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = r.parent_workflow_id AND j.run_number = r.parent_run_number
        AND j.job_id = r.parent_job_id AND j.status = 'running' AND j.child_run = r.run_number)
      AND NOT EXISTS (SELECT 1 FROM jobs k WHERE k.workflow_id = r.workflow_id AND k.run_number = r.run_number AND k.run_cancelled = 1)
    LIMIT $1::int`,
  /**
   * The calling job, locked first (a job row, before the called workflow's row: startChildRun), and
   * read at its newest version: of two servers starting its child, the second waits here and then
   * finds it running. $1 workflow id, $2 run number, $3 job id
   */
  lockCallingJob: `SELECT * FROM jobs WHERE workflow_id = $1 AND run_number = $2::int AND job_id = $3 FOR UPDATE`,
  /** The run a call started names its calling job. $1 workflow id, $2 run number, $3 parent workflow, $4 parent run, $5 parent job */
  setRunParent: `UPDATE runs SET parent_workflow_id = $3, parent_run_number = $4::int, parent_job_id = $5
    WHERE workflow_id = $1 AND run_number = $2::int RETURNING *`,
  /** The calling job runs on its child from now; no row unless queued at that attempt. $1 row id, $2 attempt, $3 child run, $4 now */
  beginCall: `UPDATE jobs SET status = 'running', child_run = $3::int, started_at_ms = $4::bigint, finished_at_ms = NULL
    WHERE row_id = $1::bigint AND status = 'queued' AND attempt = $2::int AND call_spec IS NOT NULL
    RETURNING *`,
  /**
   * A calling job and every pending job below it, locked together in row order (the order a cancel
   * locks a run's jobs in), each read at its newest version, for its end to decide on.
   * $1 workflow id, $2 run number, $3 the job's dependents (JSON array), $4 the job's row id
   */
  lockCallAndBelow: `${PENDING_BELOW}
    SELECT j.* FROM jobs j WHERE j.row_id = $4::bigint OR (j.row_id IN (SELECT row_id FROM below) AND j.status = 'pending')
    ORDER BY j.row_id FOR UPDATE OF j`,
  /** The child succeeded: the calling job with its outputs; no row unless running on that child. $1 row id, $2 child run, $3 now, $4 outputs (JSON) */
  succeedCall: `UPDATE jobs SET status = 'success', outputs = $4::text, finished_at_ms = $3::bigint, deadline_ms = NULL, error = NULL
    WHERE row_id = $1::bigint AND status = 'running' AND child_run = $2::int
    RETURNING *`,
} as const;
