/**
 * A content hash of the normalised definition, so a file reformatted or reordered in ways that do
 * not change meaning (key order, comments, YAML vs JSON) is not treated as changed on restart.
 */
import { createHash } from 'node:crypto';
import type { WorkflowDefinition } from '../domain/model.js';

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === 'object' && value !== null) {
    const sorted = Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])] as const);
    return Object.fromEntries(sorted);
  }
  return value;
}

export function definitionHash(def: WorkflowDefinition): string {
  return createHash('sha256').update(JSON.stringify(canonical(def))).digest('hex');
}
