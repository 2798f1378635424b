/**
 * The definition as YAML in the workflow-file form (README "Workflow definitions"), as the server
 * stores it: the one the shown run used (GET /api/workflows/{id}/runs/{n}/definition), so an edited
 * workflow's earlier runs show what they ran, with a note and the current one a click away when they
 * differ; a workflow that never ran shows its current definition (GET /api/workflows/{id}/definition).
 */
import { useEffect, useState } from 'preact/hooks';
import { stringify } from 'yaml';
import { api, ApiError, enc } from '../api';
import { ErrorLine } from './common';

interface Shown {
  /** The run's definition; null when the run predates kept definitions (or there is no run). */
  used: string | null;
  current: string;
}

const yaml = (doc: Record<string, unknown>) => stringify(doc, { lineWidth: 0 });

export function Definition({ id, run }: { id: string; run: number | null }) {
  const [shown, setShown] = useState<Shown | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [showCurrent, setShowCurrent] = useState(false);
  useEffect(() => {
    let live = true;
    setShown(null);
    setShowCurrent(false);
    const current = api<Record<string, unknown>>(`/api/workflows/${enc(id)}/definition`).then(yaml);
    const used =
      run === null
        ? Promise.resolve(null)
        : api<Record<string, unknown>>(`/api/workflows/${enc(id)}/runs/${run}/definition`).then(yaml, (err: unknown) => {
            // A run from before weft kept definitions: the current one is all there is.
            if (err instanceof ApiError && err.code === 'definition_not_recorded') return null;
            throw err;
          });
    Promise.all([used, current]).then(
      ([u, c]) => live && setShown({ used: u, current: c }),
      (err: unknown) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [id, run]);
  const differs = shown !== null && shown.used !== null && shown.used !== shown.current;
  const text = shown === null ? null : showCurrent || shown.used === null ? shown.current : shown.used;
  return (
    <section class="definition" aria-label="Definition">
      <p class="muted small">As stored by the server, in the workflow-file form (defaults left out; steps shown as the one command they run as).</p>
      {run !== null && shown?.used === null && (
        <p class="note" role="note">
          Run {run} started before weft kept the definition each run used: this is the current definition.
        </p>
      )}
      {differs && (
        <p class="note" role="note">
          {showCurrent ? 'The current definition, changed since run ' + run + '.' : `The definition run ${run} used; the workflow has changed since.`}{' '}
          <button type="button" class="link" onClick={() => setShowCurrent(!showCurrent)}>
            {showCurrent ? `Show run ${run}'s` : 'Show the current one'}
          </button>
        </p>
      )}
      {error ? <ErrorLine error={error} /> : <pre tabIndex={0}>{text ?? 'loading…'}</pre>}
    </section>
  );
}
