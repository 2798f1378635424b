/**
 * Request examples of the API reference (GET /api/openapi.json), taken from docs/api.md. Each is an
 * OpenAPI Example Object; the OpenAPI test validates every one against its documented schema and
 * sends it to a live server, so they stay requests the server takes.
 */

export interface Example {
  summary: string;
  description?: string;
  value: unknown;
}
export type Examples = Record<string, Example>;

const NO_BODY: Examples = {
  empty: { summary: 'No body is needed; an empty object (or an empty body) is accepted', value: {} },
};

export const createWorkflowExamples: Examples = {
  contractForm: {
    summary: 'Contract form: jobs keyed by id, as in a workflow file',
    value: {
      id: 'ci',
      name: 'CI',
      on: 'push',
      env: { GREETING: 'hi' },
      jobs: {
        lint: { run: 'make lint' },
        test: {
          steps: [{ name: 'deps', run: 'make deps' }, { run: 'make test' }],
          labels: ['linux'],
          retries: 2,
          backoff: { exponential: { base_secs: 1, max_secs: 30 } },
        },
        build: {
          name: 'Build',
          needs: ['lint', 'test'],
          run: 'make build',
          labels: ['linux'],
          env: { MODE: 'release' },
          timeout_secs: 600,
        },
      },
    },
  },
  arrayForm: {
    summary: 'Array form, as existing clients send it (the id is generated)',
    value: {
      name: 'Nightly',
      trigger: 'schedule',
      jobs: [
        { id: 'fetch', command: 'make fetch' },
        {
          id: 'report',
          name: 'Report',
          command: 'make report',
          depends_on: ['fetch'],
          required_labels: ['linux'],
          max_retries: 1,
          backoff: { Fixed: { delay_secs: 5 } },
        },
      ],
    },
  },
  arrayFormFullJobs: {
    summary: "Array form with jobs in the full shape of workflow-graph's status document",
    description: 'The runtime fields are ignored; metadata, ports, children and collapsed are kept and shown again.',
    value: {
      name: 'Graph',
      trigger: 'manual',
      jobs: [
        {
          id: 'render',
          name: 'Render',
          command: 'make render',
          depends_on: [],
          required_labels: [],
          max_retries: 0,
          status: 'queued',
          duration_secs: null,
          started_at: null,
          output: null,
          attempt: 0,
          metadata: { icon: 'paint' },
          ports: [],
          children: null,
          collapsed: false,
        },
      ],
    },
  },
};

export const putWorkflowExamples: Examples = {
  contractForm: {
    summary: "Create or update in place; the path's id wins (what `weft apply` sends)",
    value: {
      name: 'CI',
      on: 'push',
      jobs: {
        lint: { run: 'make lint' },
        test: { run: 'make test', labels: ['linux'] },
        build: { needs: ['lint', 'test'], run: 'make build' },
      },
    },
  },
};

export const runExamples = NO_BODY;
export const rerunExamples: Examples = {
  failed: { summary: 'Run again what failed, was cancelled or skipped (the default)', value: { only: 'failed' } },
  all: { summary: 'Run every job again, with the same inputs', value: { only: 'all' } },
  from: { summary: 'Run a job and everything downstream of it again', value: { from: 'build' } },
};
export const cancelExamples = NO_BODY;
export const heartbeatExamples = NO_BODY;

export const registerExamples: Examples = {
  worker: { summary: 'A worker offering two labels', value: { worker_id: 'builder-1', labels: ['linux', 'docker'] } },
};

export const claimExamples: Examples = {
  longPoll: {
    summary: 'Long poll: wait up to 20 s for a job that fits',
    value: { worker_id: 'builder-1', labels: ['linux'], lease_ttl_secs: 30, wait_secs: 20 },
  },
  once: {
    summary: 'Answer at once: a job, or null when nothing fits',
    value: { worker_id: 'me', labels: [], lease_ttl_secs: 30 },
  },
};

export const claimBatchExamples: Examples = {
  several: {
    summary: 'Up to 4 jobs, waiting up to 20 s when none fits',
    value: { worker_id: 'builder-1', labels: ['linux'], lease_ttl_secs: 30, max_jobs: 4, wait_secs: 20 },
  },
};

export const completeExamples: Examples = {
  withOutputs: { summary: 'Success, with outputs handed to downstream jobs', value: { outputs: { report: 'ok' } } },
};

export const failExamples: Examples = {
  retryable: { summary: 'A failure to retry (while the retry budget lasts)', value: { error: 'exit code 2', retryable: true } },
  permanent: { summary: 'A permanent failure (`retryable` omitted means false)', value: { error: 'command not found' } },
};

export const pushLogsExamples: Examples = {
  chunks: {
    summary: 'Two chunks; stream defaults to stdout and timestamp_ms to the arrival time',
    value: {
      chunks: [
        { sequence: 0, data: 'compiling…\n', stream: 'stdout', timestamp_ms: 1795650000200 },
        { sequence: 1, data: 'warning: unused variable\n', stream: 'stderr' },
      ],
    },
  },
};

export const reportBatchExamples: Examples = {
  completeAndClaimNext: {
    summary: 'One success, one failure, and a claim for more jobs in the same round trip',
    value: {
      reports: [
        { lease_id: '0b9d3c1e-6a3f-4f7e-9a51-2c4d8e7f1a20', outcome: 'complete', outputs: { artifact: 'build/app.tar.gz' } },
        { lease_id: '5f7e2a90-1d4b-4c8e-8b6a-3e9f0c1d2b34', outcome: 'fail', error: 'exit code 1', retryable: true },
      ],
      claim: { worker_id: 'builder-1', labels: ['linux'], lease_ttl_secs: 30, max_jobs: 2 },
    },
  },
};

export const heartbeatBatchExamples: Examples = {
  leases: {
    summary: 'Renew every lease the worker holds',
    value: { lease_ids: ['0b9d3c1e-6a3f-4f7e-9a51-2c4d8e7f1a20', '5f7e2a90-1d4b-4c8e-8b6a-3e9f0c1d2b34'] },
  },
};
