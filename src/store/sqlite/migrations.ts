import type Database from 'better-sqlite3';

/**
 * Versioned schema of the SQLite store. A migration is never edited once released: add a new one.
 * Index notes:
 * - jobs_claim is partial on status = 'queued' and ordered like the claim, so a claim is one index
 *   seek per fitting label set however many jobs are queued, delayed, running or finished.
 * - jobs_lease_expiry (leases_expiry before version 24) and jobs_deadline are partial so the reaper
 *   only ever touches live rows.
 * - label_sets keeps its implicit rowid as the order of additions (labelSetsSince): rows are never
 *   deleted and writers are serialized, so it grows in commit order.
 */
export const SQLITE_MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE workflows (
  id            TEXT PRIMARY KEY,
  name          TEXT NOT NULL,
  trigger       TEXT,
  definition    TEXT NOT NULL,
  source        TEXT NOT NULL CHECK (source IN ('file', 'api')),
  hash          TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  latest_run    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE runs (
  workflow_id    TEXT NOT NULL REFERENCES workflows(id),
  run_number     INTEGER NOT NULL,
  status         TEXT NOT NULL,
  created_at_ms  INTEGER NOT NULL,
  finished_at_ms INTEGER,
  PRIMARY KEY (workflow_id, run_number)
);

CREATE TABLE jobs (
  row_id           INTEGER PRIMARY KEY,
  workflow_id      TEXT NOT NULL,
  run_number       INTEGER NOT NULL,
  job_id           TEXT NOT NULL,
  name             TEXT NOT NULL,
  command          TEXT NOT NULL,
  env              TEXT NOT NULL,
  labels           TEXT NOT NULL,
  label_key        TEXT NOT NULL,
  needs            TEXT NOT NULL,
  dependents       TEXT NOT NULL,
  max_retries      INTEGER NOT NULL,
  backoff          TEXT NOT NULL,
  timeout_secs     INTEGER,
  status           TEXT NOT NULL,
  attempt          INTEGER NOT NULL,
  enqueued_at_ms   INTEGER NOT NULL,
  delayed_until_ms INTEGER NOT NULL,
  ready_at_ms      INTEGER NOT NULL,
  started_at_ms    INTEGER,
  finished_at_ms   INTEGER,
  deadline_ms      INTEGER,
  error            TEXT,
  outputs          TEXT,
  upstream_outputs TEXT NOT NULL,
  worker_id        TEXT,
  lease_id         TEXT,
  FOREIGN KEY (workflow_id, run_number) REFERENCES runs(workflow_id, run_number)
);
CREATE UNIQUE INDEX jobs_by_run ON jobs(workflow_id, run_number, job_id);
CREATE INDEX jobs_run_status ON jobs(workflow_id, run_number, status);
CREATE INDEX jobs_claim ON jobs(label_key, ready_at_ms, row_id) WHERE status = 'queued';
CREATE INDEX jobs_deadline ON jobs(deadline_ms) WHERE status = 'running' AND deadline_ms IS NOT NULL;

CREATE TABLE label_sets (
  key    TEXT PRIMARY KEY,
  labels TEXT NOT NULL
);

CREATE TABLE leases (
  lease_id      TEXT PRIMARY KEY,
  job_row_id    INTEGER NOT NULL REFERENCES jobs(row_id),
  workflow_id   TEXT NOT NULL,
  run_number    INTEGER NOT NULL,
  job_id        TEXT NOT NULL,
  attempt       INTEGER NOT NULL,
  worker_id     TEXT NOT NULL,
  ttl_secs      INTEGER NOT NULL,
  granted_at_ms INTEGER NOT NULL,
  renewed_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  state         TEXT NOT NULL
);
CREATE INDEX leases_expiry ON leases(expires_at_ms) WHERE state = 'active';
CREATE INDEX leases_worker ON leases(worker_id) WHERE state = 'active';

CREATE TABLE log_chunks (
  workflow_id  TEXT NOT NULL,
  run_number   INTEGER NOT NULL,
  job_id       TEXT NOT NULL,
  attempt      INTEGER NOT NULL,
  sequence     INTEGER NOT NULL,
  stream       TEXT NOT NULL,
  data         TEXT NOT NULL,
  timestamp_ms INTEGER NOT NULL,
  PRIMARY KEY (workflow_id, run_number, job_id, attempt, sequence)
) WITHOUT ROWID;

CREATE TABLE workers (
  worker_id        TEXT PRIMARY KEY,
  labels           TEXT NOT NULL,
  registered_at_ms INTEGER NOT NULL,
  last_seen_ms     INTEGER NOT NULL
);
`,
  },
  {
    version: 2,
    name: 'counters: pending needs per job, unfinished/failed/cancelled jobs per run',
    // Existing rows get the values the counters would have had, read from the jobs as they are.
    sql: `
ALTER TABLE jobs ADD COLUMN pending_needs INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET pending_needs = (
  SELECT count(*) FROM json_each(jobs.needs) k
  LEFT JOIN jobs n ON n.workflow_id = jobs.workflow_id AND n.run_number = jobs.run_number AND n.job_id = k.value
  WHERE n.status IS NOT 'success')
WHERE needs <> '[]';

ALTER TABLE runs ADD COLUMN unfinished_jobs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN failed_jobs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cancelled_jobs INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET
  unfinished_jobs = (SELECT count(*) FROM jobs j WHERE j.workflow_id = runs.workflow_id AND j.run_number = runs.run_number
    AND j.status IN ('pending', 'queued', 'running')),
  failed_jobs = (SELECT count(*) FROM jobs j WHERE j.workflow_id = runs.workflow_id AND j.run_number = runs.run_number
    AND j.status IN ('failed', 'skipped')),
  cancelled_jobs = (SELECT count(*) FROM jobs j WHERE j.workflow_id = runs.workflow_id AND j.run_number = runs.run_number
    AND j.status = 'cancelled');
`,
  },
  {
    version: 3,
    name: 'running runs indexed, for the reaper sweep',
    sql: `CREATE INDEX runs_running ON runs(workflow_id, run_number) WHERE status = 'running';`,
  },
  {
    version: 4,
    name: 'retention: finished runs by finish time, leases by job',
    // runs_finished serves the age rule in the order runs are deleted (README "Retention"). leases_job
    // lets a run's leases be deleted with it, and keeps the foreign-key check of a deleted job from
    // scanning every lease.
    sql: `
CREATE INDEX runs_finished ON runs(finished_at_ms, workflow_id, run_number) WHERE finished_at_ms IS NOT NULL;
CREATE INDEX leases_job ON leases(job_row_id);
`,
  },
  {
    version: 5,
    name: 'schedules: the next fire time of each workflow',
    // workflows_next_fire is partial so a scheduler pass reads only scheduled workflows that are due
    // (docs/architecture.md "Schedules"); `schedules` tells a save whether the fire time must be recomputed.
    sql: `
ALTER TABLE workflows ADD COLUMN schedules TEXT;
ALTER TABLE workflows ADD COLUMN next_fire_at_ms INTEGER;
CREATE INDEX workflows_next_fire ON workflows(next_fire_at_ms) WHERE next_fire_at_ms IS NOT NULL;
`,
  },
  {
    version: 6,
    name: 'runs: inputs and the run a re-run repeats',
    // inputs: the run's input values as a JSON object (NULL: none); rerun_of: the run a re-run was made
    // from (README "Re-running a run"). Both only ever read with their run row.
    sql: `
ALTER TABLE runs ADD COLUMN inputs TEXT;
ALTER TABLE runs ADD COLUMN rerun_of INTEGER;
`,
  },
  {
    version: 7,
    name: 'conditional jobs: condition, needs results and what a job learnt from above',
    // Existing rows get the default condition and nothing learnt: they behave as before (docs/architecture.md "Conditions").
    sql: `
ALTER TABLE jobs ADD COLUMN condition TEXT NOT NULL DEFAULT 'success';
ALTER TABLE jobs ADD COLUMN needs_results TEXT NOT NULL DEFAULT '{}';
ALTER TABLE jobs ADD COLUMN failed_upstream INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN run_cancelled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN conditional_dependents INTEGER NOT NULL DEFAULT 0;
`,
  },
  {
    version: 8,
    name: 'concurrent runs: queued runs and their planned jobs',
    // plan: a queued run's jobs (JSON) until a slot frees; runs_queued lets a start and the reaper find
    // queued runs without reading finished ones (docs/architecture.md "Concurrent runs").
    sql: `
ALTER TABLE runs ADD COLUMN plan TEXT;
CREATE INDEX runs_queued ON runs(workflow_id, run_number) WHERE status = 'queued';
`,
  },
  {
    version: 9,
    name: 'leases: the token each was claimed with',
    // token_name: only that token may use the lease (README "Access tokens"). Leases granted before
    // keep NULL, which binds them to no token, as a claim on a server without tokens does.
    sql: `
ALTER TABLE leases ADD COLUMN token_name TEXT;
`,
  },
  {
    version: 10,
    name: 'large runs: the log budget of each job\'s attempt, and a run\'s jobs in row order',
    // MAX_LOG_BYTES_PER_ATTEMPT (README "Limits"): a push reads and adds to the attempt's count on its
    // job's row, so that the cap costs no scan of the chunks; log_truncated once the marker is stored.
    // Rows written before count from their next push. jobs_run_rows (the rowid is its last column)
    // lets a list read a run of thousands of jobs a page at a time, each page one range of the index
    // (getRunJobsPage), where jobs_run_status would read and sort the whole run for every page.
    sql: `
ALTER TABLE jobs ADD COLUMN log_attempt INTEGER;
ALTER TABLE jobs ADD COLUMN log_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN log_truncated INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_run_rows ON jobs(workflow_id, run_number);
`,
  },
  {
    version: 11,
    name: 'workers by last sight, for pruning',
    // The reaper deletes workers unseen for WORKER_RETAIN_SECS oldest first: a range read, however many workers there are.
    sql: `CREATE INDEX workers_last_seen ON workers(last_seen_ms);`,
  },
  {
    version: 12,
    name: 'matrix and fan-out instances: group, values, item, fail_fast and max_parallel',
    // README "Matrix, fan-out and artifacts". A plain job keeps NULL / 0 in each. fast_cancelled marks
    // an instance a sibling's failure cancelled (fail_fast): it does not make its run cancelled.
    // jobs_group_running lets a claim count a group's running instances (max_parallel) by an index read.
    sql: `
ALTER TABLE jobs ADD COLUMN group_id TEXT;
ALTER TABLE jobs ADD COLUMN matrix TEXT;
ALTER TABLE jobs ADD COLUMN max_parallel INTEGER;
ALTER TABLE jobs ADD COLUMN for_each TEXT;
ALTER TABLE jobs ADD COLUMN item TEXT;
ALTER TABLE jobs ADD COLUMN item_index INTEGER;
ALTER TABLE jobs ADD COLUMN fail_fast INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN fast_cancelled INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_group_running ON jobs(workflow_id, run_number, group_id) WHERE status = 'running' AND group_id IS NOT NULL;
`,
  },
  {
    version: 13,
    name: 'artifacts: stored files of jobs, in chunks',
    // README "Artifacts": jobs.artifact_spec holds the job's `artifacts:`/`download:` (JSON, NULL for
    // neither); artifacts names each stored file of an attempt and the blob holding its bytes;
    // artifact_chunks holds the blobs' bytes in chunks of 1 MiB (so that N servers on one database
    // share them and a backup holds them); artifact_uploads the blobs still being written.
    sql: `
ALTER TABLE jobs ADD COLUMN artifact_spec TEXT;
CREATE TABLE artifacts (
  workflow_id   TEXT NOT NULL,
  run_number    INTEGER NOT NULL,
  job_id        TEXT NOT NULL,
  attempt       INTEGER NOT NULL,
  name          TEXT NOT NULL,
  blob_id       TEXT NOT NULL,
  size          INTEGER NOT NULL,
  sha256        TEXT NOT NULL,
  chunk_bytes   INTEGER NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (workflow_id, run_number, job_id, attempt, name)
);
CREATE INDEX artifacts_blob ON artifacts(blob_id);
CREATE TABLE artifact_uploads (
  blob_id       TEXT PRIMARY KEY,
  lease_id      TEXT NOT NULL,
  started_at_ms INTEGER NOT NULL
);
CREATE INDEX artifact_uploads_started ON artifact_uploads(started_at_ms);
CREATE TABLE artifact_chunks (
  blob_id TEXT NOT NULL,
  seq     INTEGER NOT NULL,
  data    BLOB NOT NULL,
  PRIMARY KEY (blob_id, seq)
);
`,
  },
  {
    version: 14,
    name: 'priorities: jobs.priority, and the claim index ordered by it',
    // README "Priorities": a claim takes the highest priority first, oldest first within one, so
    // jobs_claim leads with the priority (descending) and stays one ordered range read per label key.
    // jobs_claim_capped holds only queued instances of capped groups, so that a claim learns in one
    // probe of a (normally empty) index whether it must count groups' running instances.
    sql: `
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
DROP INDEX jobs_claim;
CREATE INDEX jobs_claim ON jobs(label_key, priority DESC, ready_at_ms, row_id) WHERE status = 'queued';
CREATE INDEX jobs_claim_capped ON jobs(label_key) WHERE status = 'queued' AND max_parallel IS NOT NULL;
`,
  },
  {
    version: 15,
    name: 'secrets: sealed values by scope and name',
    // README "Secrets": scope '' is every workflow's, else one workflow id's; the value is sealed by the
    // engine (src/engine/secret-box.ts) under the key key_id names, so this file never holds it in clear.
    sql: `
CREATE TABLE secrets (
  scope         TEXT NOT NULL,
  name          TEXT NOT NULL,
  sealed        TEXT NOT NULL,
  key_id        TEXT NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  updated_by    TEXT,
  PRIMARY KEY (scope, name)
) WITHOUT ROWID;
`,
  },
  {
    version: 16,
    name: 'approval gates: the gate, the wait and the decision of a job',
    // README "Approvals": a job with `approval:` waits in `awaiting_approval` once its needs are met.
    // `approval` is the gate as defined (JSON; NULL: none), the other columns its wait and decision.
    // jobs_approval_deadline holds only waits with a timeout, so the reaper's pass reads the ones due
    // by a range read however many jobs there are.
    sql: `
ALTER TABLE jobs ADD COLUMN approval TEXT;
ALTER TABLE jobs ADD COLUMN approval_requested_at_ms INTEGER;
ALTER TABLE jobs ADD COLUMN approval_deadline_ms INTEGER;
ALTER TABLE jobs ADD COLUMN approval_decision TEXT;
ALTER TABLE jobs ADD COLUMN approval_decided_by TEXT;
ALTER TABLE jobs ADD COLUMN approval_decided_at_ms INTEGER;
ALTER TABLE jobs ADD COLUMN approval_comment TEXT;
CREATE INDEX jobs_approval_deadline ON jobs(approval_deadline_ms) WHERE status = 'awaiting_approval' AND approval_deadline_ms IS NOT NULL;
`,
  },
  {
    version: 17,
    name: 'concurrency groups: runs.concurrency_group',
    // README "Concurrency groups": a start and a queued run's start read the group's running and queued
    // runs, of every workflow, through runs_group; only runs that are in a group are in it.
    sql: `
ALTER TABLE runs ADD COLUMN concurrency_group TEXT;
CREATE INDEX runs_group ON runs(concurrency_group, status) WHERE concurrency_group IS NOT NULL AND status IN ('running', 'queued');
`,
  },
  {
    version: 18,
    name: 'concurrency groups of jobs: jobs.concurrency_group, cancel_in_progress and group_checked; jobs awaiting approval counted',
    // README "Concurrency groups": the claim takes no job of a group while another job of it runs, and
    // a job arriving in a group replaces the group's waiting ones (and, with cancel_in_progress, its
    // running one). group_checked is 0 until that arrival has been settled (job-concurrency.ts).
    // jobs_job_group holds only the open jobs of a group; jobs_group_arrivals only those not yet
    // settled, so finding them costs nothing while there are none. jobs_awaiting_approval lets the
    // metrics count the jobs awaiting approval (README "Metrics") without reading the finished ones.
    sql: `
ALTER TABLE jobs ADD COLUMN concurrency_group TEXT;
ALTER TABLE jobs ADD COLUMN cancel_in_progress INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN group_checked INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_job_group ON jobs(concurrency_group, status) WHERE concurrency_group IS NOT NULL AND status IN ('queued', 'running');
CREATE INDEX jobs_group_arrivals ON jobs(concurrency_group) WHERE concurrency_group IS NOT NULL AND group_checked = 0 AND status IN ('queued', 'running');
CREATE INDEX jobs_awaiting_approval ON jobs(label_key) WHERE status = 'awaiting_approval';
`,
  },
  {
    version: 19,
    name: 'how a run was started, and the definition it used',
    // README "Dashboard": a run records what started it (runs.trigger: manual, schedule or rerun; NULL
    // for runs from before) and the hash of the definition it was planned from; run_definitions keeps
    // each definition a run used, once per workflow and hash, so an edited workflow's earlier runs
    // still show theirs.
    sql: `
ALTER TABLE runs ADD COLUMN trigger TEXT;
ALTER TABLE runs ADD COLUMN definition_hash TEXT;
CREATE TABLE run_definitions (
  workflow_id   TEXT NOT NULL,
  hash          TEXT NOT NULL,
  definition    TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (workflow_id, hash)
) WITHOUT ROWID;
`,
  },
  {
    version: 20,
    name: 'the run-end outbox: run_ends, filled by triggers on runs',
    // docs/architecture.md "Run ends": every statement that ends a run (settled, cancelled while
    // queued, started already over) records the end for each consumer in the same transaction, by
    // trigger, so no path can miss one; each consumer deletes its entries once it has acted on them.
    sql: `
CREATE TABLE run_ends (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  consumer     TEXT NOT NULL,
  workflow_id  TEXT NOT NULL,
  run_number   INTEGER NOT NULL,
  state        TEXT NOT NULL,
  ended_at_ms  INTEGER NOT NULL
);
CREATE INDEX run_ends_pending ON run_ends(consumer, seq);
CREATE TRIGGER runs_ended AFTER UPDATE OF status ON runs
  WHEN OLD.status IN ('queued', 'running') AND NEW.status IN ('success', 'failed', 'cancelled')
BEGIN
  INSERT INTO run_ends (consumer, workflow_id, run_number, state, ended_at_ms)
    SELECT c.value, NEW.workflow_id, NEW.run_number, NEW.status, coalesce(NEW.finished_at_ms, 0)
    FROM json_each('["notify","follow","call"]') c;
END;
CREATE TRIGGER runs_inserted_ended AFTER INSERT ON runs
  WHEN NEW.status IN ('success', 'failed', 'cancelled')
BEGIN
  INSERT INTO run_ends (consumer, workflow_id, run_number, state, ended_at_ms)
    SELECT c.value, NEW.workflow_id, NEW.run_number, NEW.status, coalesce(NEW.finished_at_ms, 0)
    FROM json_each('["notify","follow","call"]') c;
END;
`,
  },
  {
    version: 21,
    name: 'runs started from outside: the event of a run, its delivery key, the listener index',
    // README "Triggers and notifications". runs.event_name: the event a run was started with (NULL: none);
    // its payload, up to 1 MiB, is in run_events apart from the run row, which every run read selects whole.
    // run_deliveries: a delivery key (webhook/<id>, event/<name>/<id>, workflow_run/<workflow>/<n>)
    // inserted in the very transaction that starts the run, under the workflow row's lock, so that a
    // delivery seen twice, on one server or several, starts one run. workflow_triggers: who listens for
    // a named event and who follows a workflow's runs, kept in step with each saved definition, so a
    // listener is found by its key and no definition is parsed per event. All three go with their run or
    // workflow by ON DELETE CASCADE, so retention and deleting a workflow need no statement of their own.
    sql: `
ALTER TABLE runs ADD COLUMN event_name TEXT;
CREATE TABLE run_events (
  workflow_id TEXT NOT NULL,
  run_number  INTEGER NOT NULL,
  payload     TEXT NOT NULL,
  PRIMARY KEY (workflow_id, run_number),
  FOREIGN KEY (workflow_id, run_number) REFERENCES runs(workflow_id, run_number) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE TABLE run_deliveries (
  workflow_id   TEXT NOT NULL,
  delivery_key  TEXT NOT NULL,
  run_number    INTEGER NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (workflow_id, delivery_key),
  FOREIGN KEY (workflow_id, run_number) REFERENCES runs(workflow_id, run_number) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX run_deliveries_run ON run_deliveries(workflow_id, run_number);
CREATE TABLE workflow_triggers (
  kind        TEXT NOT NULL,
  key         TEXT NOT NULL,
  workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  PRIMARY KEY (kind, key, workflow_id)
) WITHOUT ROWID;
CREATE INDEX workflow_triggers_workflow ON workflow_triggers(workflow_id);
`,
  },
  {
    version: 22,
    name: 'notifications: the outbox of webhook deliveries of run ends',
    // README "Notifications": one row per run and target (notifications_target, so a run end handled
    // twice inserts nothing twice); id is the delivery id sent on every attempt. Deliverers claim rows
    // off notifications_due, which holds only the rows not yet final: due_at_ms is the next attempt of
    // a pending row and the end of the claim of a delivering one. notifications_settled lets the
    // reaper age final rows out; notifications_target also serves the list of a workflow or a run, and
    // notifications_status the list of one state, newest first.
    sql: `
CREATE TABLE notifications (
  seq             INTEGER PRIMARY KEY,
  id              TEXT NOT NULL UNIQUE,
  workflow_id     TEXT NOT NULL,
  run_number      INTEGER NOT NULL,
  run_status      TEXT NOT NULL,
  target          TEXT NOT NULL,
  url             TEXT NOT NULL,
  secret_name     TEXT,
  format          TEXT,
  payload         TEXT NOT NULL,
  status          TEXT NOT NULL,
  attempts        INTEGER NOT NULL DEFAULT 0,
  due_at_ms       INTEGER,
  claim_id        TEXT,
  last_error      TEXT,
  delivered_at_ms INTEGER,
  created_at_ms   INTEGER NOT NULL,
  updated_at_ms   INTEGER NOT NULL
);
CREATE UNIQUE INDEX notifications_target ON notifications(workflow_id, run_number, target);
CREATE INDEX notifications_due ON notifications(due_at_ms) WHERE status IN ('pending', 'delivering');
CREATE INDEX notifications_settled ON notifications(updated_at_ms) WHERE status IN ('delivered', 'failed');
CREATE INDEX notifications_status ON notifications(status, seq);
`,
  },
  {
    version: 23,
    name: 'workflows calling workflows: the call of a job, the parent of a run, the calls between workflows',
    // README "Workflows calling workflows": jobs.call_spec holds a job's uses/with (JSON; NULL: an
    // ordinary job) and child_run the run of the called workflow its latest attempt started; a run a
    // call started names that job (runs.parent_*). runs_children holds only child runs still active,
    // so finding those whose caller's job moved on (a cancel) costs nothing while there are none.
    // workflow_calls keeps which workflow calls which, saved with the definition, so a save can refuse
    // a cycle or a chain too deep without reading every definition (workflow_calls_callee: who calls X).
    sql: `
ALTER TABLE jobs ADD COLUMN call_spec TEXT;
ALTER TABLE jobs ADD COLUMN child_run INTEGER;
ALTER TABLE runs ADD COLUMN parent_workflow_id TEXT;
ALTER TABLE runs ADD COLUMN parent_run_number INTEGER;
ALTER TABLE runs ADD COLUMN parent_job_id TEXT;
CREATE INDEX runs_children ON runs(parent_workflow_id, parent_run_number, parent_job_id)
  WHERE parent_workflow_id IS NOT NULL AND status IN ('running', 'queued');
CREATE TABLE workflow_calls (
  caller_id TEXT NOT NULL,
  callee_id TEXT NOT NULL,
  PRIMARY KEY (caller_id, callee_id)
) WITHOUT ROWID;
CREATE INDEX workflow_calls_callee ON workflow_calls(callee_id, caller_id);
`,
  },
  {
    version: 24,
    name: 'leases kept in their job row; the leases table keeps the ones a job moved on from',
    // docs/performance.md "SQLite: the lease in the job row": a claim and a complete touched the leases
    // table, its lease_id key and three indexes besides the job's own pages. A job's current lease (the
    // one jobs.lease_id names: running under it, or ended under it) now lives in the job row, and
    // `leases` is its history: the lease a job moves on from (a retry, an expiry, a release clears
    // jobs.lease_id) is copied there by the trigger jobs_lease_moved_on, in the statement that clears it,
    // so no path can lose one; a late call on it still gets its settled state (SPEC/CONTRACT lease
    // errors). The row that holds a lease is the one with lease_state set: a re-run's kept job copies
    // the lease_id of the job it keeps (README "Re-running a run") but holds no lease. jobs_lease finds
    // rows by lease id: not unique (those copies), and partial on lease_id alone, which no lease call
    // changes, so that settling a lease (lease_state) leaves its entry unwritten. jobs_lease_expiry
    // holds only active leases, for the reaper, the running counts and the worker pruning (worker_id:
    // its covering column).
    // Existing leases: each job's current one moves into its row; an active one no job runs under any
    // more is void (what a lease call or the reaper would have made of it: settle.ts checkLease), so
    // every lease left in `leases` is settled and its expiry and worker indexes go.
    sql: `
ALTER TABLE jobs ADD COLUMN lease_ttl_secs INTEGER;
ALTER TABLE jobs ADD COLUMN lease_granted_at_ms INTEGER;
ALTER TABLE jobs ADD COLUMN lease_renewed_at_ms INTEGER;
ALTER TABLE jobs ADD COLUMN lease_expires_at_ms INTEGER;
ALTER TABLE jobs ADD COLUMN lease_state TEXT;
ALTER TABLE jobs ADD COLUMN lease_token_name TEXT;
UPDATE jobs SET (lease_ttl_secs, lease_granted_at_ms, lease_renewed_at_ms, lease_expires_at_ms, lease_state, lease_token_name) = (
    SELECT l.ttl_secs, l.granted_at_ms, l.renewed_at_ms, l.expires_at_ms, l.state, l.token_name FROM leases l
    WHERE l.lease_id = jobs.lease_id AND l.job_row_id = jobs.row_id)
  WHERE lease_id IS NOT NULL;
DELETE FROM leases WHERE lease_id IN (SELECT lease_id FROM jobs WHERE lease_state IS NOT NULL);
UPDATE leases SET state = 'expired' WHERE state = 'active';
DROP INDEX leases_expiry;
DROP INDEX leases_worker;
CREATE INDEX jobs_lease ON jobs(lease_id) WHERE lease_id IS NOT NULL;
CREATE INDEX jobs_lease_expiry ON jobs(lease_expires_at_ms, worker_id) WHERE lease_state = 'active';
CREATE TRIGGER jobs_lease_moved_on AFTER UPDATE OF lease_id ON jobs
  WHEN OLD.lease_state IS NOT NULL AND OLD.lease_id IS NOT NULL AND OLD.lease_id IS NOT NEW.lease_id
BEGIN
  INSERT INTO leases (lease_id, job_row_id, workflow_id, run_number, job_id, attempt, worker_id, ttl_secs, granted_at_ms,
      renewed_at_ms, expires_at_ms, state, token_name)
    VALUES (OLD.lease_id, OLD.row_id, OLD.workflow_id, OLD.run_number, OLD.job_id, OLD.attempt, OLD.worker_id,
      OLD.lease_ttl_secs, OLD.lease_granted_at_ms, OLD.lease_renewed_at_ms, OLD.lease_expires_at_ms,
      CASE WHEN OLD.lease_state = 'active' THEN 'expired' ELSE OLD.lease_state END, OLD.lease_token_name);
END;
`,
  },
];

/** Applies the migrations this file has not yet recorded, each in its own transaction. */
export function migrate(db: Database.Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)`);
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version),
  );
  for (const m of SQLITE_MIGRATIONS) {
    if (applied.has(m.version)) continue;
    // IMMEDIATE so two processes starting on a fresh file do not both apply the same migration.
    db.transaction(() => {
      const again = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
      if (again) return;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        Date.now(),
      );
    }).immediate();
  }
}
