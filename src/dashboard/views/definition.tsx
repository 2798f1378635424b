/**
 * The definition as YAML in the workflow-file form (README "Workflow definitions"), as the server
 * stores it (GET /api/workflows/{id}/definition): what runs, environment included.
 */
import { useEffect, useState } from 'preact/hooks';
import { stringify } from 'yaml';
import { api, enc } from '../api';
import { ErrorLine } from './common';

export function Definition({ id }: { id: string }) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    api<Record<string, unknown>>(`/api/workflows/${enc(id)}/definition`).then(
      (doc) => live && setText(stringify(doc, { lineWidth: 0 })),
      (err: unknown) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [id]);
  return (
    <section class="definition" aria-label="Definition">
      <p class="muted small">As stored by the server, in the workflow-file form (defaults left out; steps shown as the one command they run as).</p>
      {error ? <ErrorLine error={error} /> : <pre tabIndex={0}>{text ?? 'loading…'}</pre>}
    </section>
  );
}
