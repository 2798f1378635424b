export { WorkflowClient, WorkflowApiError } from './client.js';
export type { WorkflowClientOptions, ListWorkflowsOptions, LogStreamEvent, StreamLogsOptions } from './client.js';
