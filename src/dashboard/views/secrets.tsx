/**
 * Secrets (README "Secrets"): their names, scopes and when they were set, never a value (the server
 * never answers one); an admin sets and removes them here. The value field is a password input that
 * is cleared once sent, so the page keeps no copy.
 */
import { useEffect, useState } from 'preact/hooks';
import type { SecretView } from '../../protocol/wire.js';
import { api, ApiError, enc } from '../api';
import { ago, useNow } from '../format';
import { workflowHref } from '../router';
import { ErrorLine } from './common';

function explain(err: unknown): unknown {
  if (err instanceof ApiError && err.status === 403) return new Error('Only an admin token may see or change secrets. Reload the page to enter another token.');
  return err;
}

const scopeQuery = (workflowId: string | null) => (workflowId ? `?workflow_id=${enc(workflowId)}` : '');

export function SecretsView() {
  const [secrets, setSecrets] = useState<SecretView[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [workflow, setWorkflow] = useState('');
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  const now = useNow();

  const load = () =>
    api<{ secrets: SecretView[] }>('/api/secrets')
      .then((r) => {
        setSecrets(r.secrets);
        setError(null);
      })
      .catch((err) => setError(explain(err)));
  useEffect(() => void load(), []);

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setDone(null);
    try {
      const wf = workflow.trim() || null;
      const saved = await api<SecretView>(`/api/secrets/${enc(name.trim())}${scopeQuery(wf)}`, {
        method: 'PUT',
        body: JSON.stringify({ value }),
        headers: { 'content-type': 'application/json' },
      });
      setValue('');
      setDone(`Secret ${saved.name} set for ${saved.workflow_id ? `workflow ${saved.workflow_id}` : 'every workflow'}.`);
      await load();
    } catch (err) {
      setError(explain(err));
    } finally {
      setBusy(false);
    }
  };

  const remove = async (s: SecretView) => {
    const where = s.workflow_id ? `workflow ${s.workflow_id}` : 'every workflow';
    if (!confirm(`Remove secret ${s.name} for ${where}? Runs that use it will not start.`)) return;
    try {
      await api(`/api/secrets/${enc(s.name)}${scopeQuery(s.workflow_id)}`, { method: 'DELETE' });
      setDone(`Secret ${s.name} removed for ${where}.`);
      await load();
    } catch (err) {
      setError(explain(err));
    }
  };

  return (
    <section aria-labelledby="secrets-title">
      <h1 id="secrets-title">Secrets</h1>
      <p class="muted">
        A job gets a secret as <code>{'env: { KEY: ${{ secrets.NAME }} }'}</code>; its value is never shown again, here or anywhere.
      </p>
      <ErrorLine error={error} />
      {done && (
        <p class="notice" role="status">
          {done}
        </p>
      )}
      {secrets === null ? (
        !error && <p class="muted">Loading…</p>
      ) : secrets.length === 0 ? (
        <p class="muted">No secrets yet.</p>
      ) : (
        <table class="list" aria-label="Secrets">
          <thead>
            <tr>
              <th>Name</th>
              <th>For</th>
              <th>Set</th>
              <th>By</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {secrets.map((s) => (
              <tr key={`${s.workflow_id ?? ''}/${s.name}`} data-secret={s.name} data-scope={s.workflow_id ?? ''}>
                <td>
                  <code>{s.name}</code>
                </td>
                <td>{s.workflow_id ? <a href={workflowHref(s.workflow_id)}>{s.workflow_id}</a> : <span class="muted">every workflow</span>}</td>
                <td title={new Date(s.updated_at_ms).toISOString()}>{ago(s.updated_at_ms, now)}</td>
                <td>{s.updated_by ?? <span class="muted">—</span>}</td>
                <td>
                  <button type="button" onClick={() => void remove(s)} aria-label={`Remove ${s.name}${s.workflow_id ? ` of ${s.workflow_id}` : ''}`}>
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="secret-form" aria-label="Set a secret" onSubmit={(e) => void save(e)}>
        <h2>Set a secret</h2>
        <label>
          Name <input name="name" required pattern="[A-Za-z_][A-Za-z0-9_]{0,127}" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>{' '}
        <label>
          Workflow <input name="workflow" placeholder="every workflow" value={workflow} onInput={(e) => setWorkflow(e.currentTarget.value)} />
        </label>{' '}
        <label>
          Value{' '}
          <input name="value" type="password" required autoComplete="new-password" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </label>{' '}
        <button type="submit" disabled={busy}>
          Set
        </button>
      </form>
    </section>
  );
}
