import type { JobChange } from './store.js';

/** The JobChange naming a job (or any row carrying its key): what both stores report a job moved by. */
export function change(j: { workflow_id: string; run_number: number; job_id: string }): JobChange {
  return { workflow_id: j.workflow_id, run_number: j.run_number, job_id: j.job_id };
}
