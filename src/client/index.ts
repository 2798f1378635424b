export { WorkflowClient, WorkflowApiError, WorkflowNetworkError } from './client.js';
export type { WorkflowClientOptions, ListWorkflowsOptions, LogStreamEvent, StreamLogsOptions, RequestOptions } from './client.js';
export type * from '../protocol/wire.js';
export { ERROR_CODES, classifyAnswer, isTransientStatus, compatJobStatus, COMPAT_JOB_STATUSES } from '../protocol/index.js';
export type { ErrorCode, ErrorBody, CompatJobStatus, LeaseCallOutcome } from '../protocol/index.js';
