import type { Logger } from 'pino';
import { nextFireAfter } from '../domain/schedule.js';
import type { WorkflowDefinition } from '../domain/model.js';
import { WeftError } from '../protocol/errors.js';
import type { StatusDocument } from '../protocol/wire.js';
import type { Store, WorkflowRecord } from '../store/store.js';
import { callChainError, checkCallInputs } from './call-checks.js';
import type { Calls } from './calls.js';
import { workflowNotFound } from './reads.js';
import { DELETE_BATCH } from './retention.js';
import { statusDocument } from './views.js';

export interface WorkflowSavesContext {
  store: Store;
  now: () => number;
  log: Logger;
  calls: Calls;
  /** The workflow's definition or runs changed (dashboards and event streams listen). */
  changed: (id: string) => void;
  /** The status document of a saved workflow. */
  status: (id: string) => Promise<StatusDocument>;
  /** Deletes the artifact files no row names any more. */
  collectBlobs: () => Promise<void>;
}

/**
 * Creating, saving and deleting workflow definitions (docs/api.md "Workflows"): the checks of called
 * workflows' inputs and call chains (README "Workflows calling workflows") before the store's one
 * guarded write, and deletion in bounded steps.
 */
export class WorkflowSaves {
  constructor(private readonly ctx: WorkflowSavesContext) {}

  /** Creates a workflow; 409 when the id is taken. */
  async create(def: WorkflowDefinition, hash: string): Promise<StatusDocument> {
    const rec = this.record(def, hash, 'api');
    await this.ctx.store.read((r) => checkCallInputs(r, def));
    const outcome = await this.ctx.store.createWorkflow(rec);
    if (outcome === 'exists') {
      throw new WeftError('workflow_exists', `workflow "${def.id}" already exists; use PUT /api/workflows/${def.id} to update it`);
    }
    if (typeof outcome === 'object') throw callChainError(def, outcome);
    this.ctx.calls.noteDefinition(def.id, def);
    this.ctx.changed(def.id);
    return statusDocument(rec, null, null);
  }

  /**
   * Creates or updates a workflow in place (run history stays). Returns what happened so a file
   * loader can log it and PUT can answer 201 or 200.
   */
  async save(def: WorkflowDefinition, hash: string, source: 'file' | 'api'): Promise<{ outcome: 'created' | 'updated' | 'unchanged'; status: StatusDocument }> {
    // README "Workflows calling workflows": the called workflows saved now take its `with:` values, and
    // the store refuses a cycle or a chain too deep (a 400 naming the chain).
    await this.ctx.store.read((r) => checkCallInputs(r, def));
    const outcome = await this.ctx.store.saveWorkflow(this.record(def, hash, source));
    if (typeof outcome === 'object') throw callChainError(def, outcome);
    this.ctx.calls.noteDefinition(def.id, def);
    if (outcome !== 'unchanged') this.ctx.changed(def.id);
    return { outcome, status: await this.ctx.status(def.id) };
  }

  /**
   * Deletes the workflow and its whole history in bounded steps (docs/api.md). 409 `workflow_active`
   * while a run is active; a run started between two steps stops it there, with the older runs gone.
   */
  async delete(id: string): Promise<void> {
    for (let step = 0; ; step++) {
      const outcome = await this.ctx.store.deleteWorkflow(id, DELETE_BATCH);
      if (outcome === 'more') continue;
      if (outcome === 'active') {
        throw new WeftError(
          'workflow_active',
          `workflow "${id}" has an active run; cancel it first (POST /api/workflows/${id}/cancel), then delete the workflow`,
        );
      }
      // Not found after a first step: another caller finished the deletion.
      if (outcome === 'not_found' && step === 0) throw workflowNotFound(id);
      this.ctx.log.info({ workflow_id: id }, 'workflow deleted');
      this.ctx.changed(id);
      await this.ctx.collectBlobs();
      return;
    }
  }

  private record(def: WorkflowDefinition, hash: string, source: 'file' | 'api'): WorkflowRecord {
    const now = this.ctx.now();
    return { id: def.id, name: def.name, trigger: def.trigger, definition: def, source, hash, created_at_ms: now, updated_at_ms: now, latest_run: 0, next_fire_at_ms: nextFireAfter(def.schedules, now) };
  }
}
