/**
 * Workflow definitions: parsing, validation and normalisation of workflow files and POST bodies.
 * Pure except for `loadWorkflowDir`.
 */
export { DefinitionError, formatIssue, type DefinitionIssue } from './issues.js';
export { parseWorkflowObject, parseWorkflowText, type ObjectOptions, type TextOptions } from './parse.js';
export { loadWorkflowDir, type LoadResult, type LoadedWorkflow } from './load.js';
export { definitionHash } from './hash.js';
export { definitionDocument, type DefinitionDocument } from './render.js';
export { ID_PATTERN } from './workflow.js';
