/**
 * Versioned schema of the SQLite store. A migration is never edited once released: add a new one.
 * Index notes:
 * - jobs_claim is partial on status = 'queued' and ordered like the claim, so a claim is one index
 *   seek per fitting label set however many jobs are queued, delayed, running or finished.
 * - leases_expiry and jobs_deadline are partial so the reaper only ever touches live rows.
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
];
