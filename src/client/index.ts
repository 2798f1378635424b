export { WorkflowClient, WorkflowApiError, WorkflowNetworkError } from './client.js';
export type { WorkflowClientOptions, ListWorkflowsOptions, LogStreamEvent, StreamLogsOptions, RequestOptions } from './client.js';
