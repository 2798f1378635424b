/**
 * Workflows calling workflows (calls.ts; README "Workflows calling workflows"): the calls between
 * workflows a save checks and keeps, a called workflow's run started for its calling job and that
 * job's end, and what the engine's passes look for. Part of QUERIES (queries.ts); parameters are
 * listed above each statement.
 */
export const CALL_QUERIES = {
  /** Saved calls from these workflows or to those. ? callers (JSON array), ? callees (JSON array) */
  callEdges: `SELECT caller_id, callee_id FROM workflow_calls WHERE caller_id IN (SELECT value FROM json_each(?))
    UNION SELECT caller_id, callee_id FROM workflow_calls WHERE callee_id IN (SELECT value FROM json_each(?))`,
  /** ? caller */
  deleteCallEdges: `DELETE FROM workflow_calls WHERE caller_id = ?`,
  /** ? caller, ? callee */
  insertCallEdge: `INSERT INTO workflow_calls (caller_id, callee_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
  /** Workflows that call another, through workflow_calls' primary key. ? limit */
  callingWorkflows: `SELECT DISTINCT caller_id FROM workflow_calls ORDER BY caller_id LIMIT +?`,
  /**
   * Calling jobs ready to start their child: a range read of jobs_claim for the call label key, which
   * no claim ever reads. ? call label key, ? now_ms, ? limit
   */
  queuedCalls: `SELECT * FROM jobs WHERE status = 'queued' AND label_key = ? AND ready_at_ms <= ?
    ORDER BY priority DESC, ready_at_ms, row_id LIMIT +?`,
  /**
   * Child runs still active whose calling job does not run on them any more, and that no cancel
   * reached yet (one that spared its always() jobs has them marked run_cancelled), through runs_children
   * and, per run, the jobs' unique (workflow, run, job) index. ? limit
   */
  orphanedChildRuns: `SELECT r.* FROM runs r
    WHERE r.parent_workflow_id IS NOT NULL AND r.status IN ('running', 'queued')
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = r.parent_workflow_id AND j.run_number = r.parent_run_number
        AND j.job_id = r.parent_job_id AND j.status = 'running' AND j.child_run = r.run_number)
      AND NOT EXISTS (SELECT 1 FROM jobs k WHERE k.workflow_id = r.workflow_id AND k.run_number = r.run_number AND k.run_cancelled = 1)
    LIMIT +?`,
  /** The run a call started names its calling job. ? parent workflow, ? parent run, ? parent job, ? workflow_id, ? run_number */
  setRunParent: `UPDATE runs SET parent_workflow_id = ?, parent_run_number = ?, parent_job_id = ? WHERE workflow_id = ? AND run_number = ?`,
  /** The calling job runs on its child from now; no row unless queued at that attempt. @row_id @attempt @child_run @now_ms */
  beginCall: `UPDATE jobs SET status = 'running', child_run = @child_run, started_at_ms = @now_ms, finished_at_ms = NULL
    WHERE row_id = @row_id AND status = 'queued' AND attempt = @attempt AND call_spec IS NOT NULL
    RETURNING *`,
  /** The child succeeded: the calling job with its outputs; no row unless running on that child. @row_id @child_run @now_ms @outputs (JSON) */
  succeedCall: `UPDATE jobs SET status = 'success', outputs = @outputs, finished_at_ms = @now_ms, deadline_ms = NULL, error = NULL
    WHERE row_id = @row_id AND status = 'running' AND child_run = @child_run
    RETURNING *`,
} as const;
