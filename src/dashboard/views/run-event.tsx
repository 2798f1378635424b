/**
 * The event a run was started with (README "Triggers and notifications"): a webhook's payload, a named
 * event's, or the followed run's, as a folded JSON block under the run's header. Read only once opened
 * (`GET /api/workflows/{id}/runs/{n}/event`): a payload may be up to 1 MiB.
 */
import { useState } from 'preact/hooks';
import { api, enc } from '../api';
import { ErrorLine } from './common';

export function RunEvent({ wf, run, name }: { wf: string; run: number; name: string }) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const load = () => {
    if (text !== null) return;
    api<unknown>(`/api/workflows/${enc(wf)}/runs/${run}/event`)
      .then((payload) => setText(JSON.stringify(payload, null, 2)))
      .catch(setError);
  };
  return (
    <details class="run-event" onToggle={(e) => (e.currentTarget as HTMLDetailsElement).open && load()}>
      <summary>
        Event <code>{name}</code>
      </summary>
      <ErrorLine error={error} />
      {text === null && !error ? <p class="muted small">loading…</p> : text !== null && <pre class="event-json">{text}</pre>}
    </details>
  );
}
