/**
 * Starting a run of a workflow that declares inputs (README "Run inputs"): the Run button asks for
 * their values first, prefilled with the defaults, required ones marked. A workflow without inputs
 * starts at once, as before.
 */
import { useState } from 'preact/hooks';
import { api, enc, post } from '../api';

export interface DeclaredInput {
  default?: string;
  required?: boolean;
  description?: string;
}

/** The inputs a workflow declares, read from its stored definition (GET …/definition). */
export async function declaredInputs(id: string): Promise<Record<string, DeclaredInput>> {
  const def = await api<{ inputs?: Record<string, DeclaredInput> }>(`/api/workflows/${enc(id)}/definition`);
  return def.inputs ?? {};
}

/**
 * Starts a run of `id`; when it declares inputs, `ask` is called with them instead and the caller
 * shows {@link RunInputsForm}.
 */
export async function startRun(id: string, ask: (inputs: Record<string, DeclaredInput>) => void): Promise<boolean> {
  const inputs = await declaredInputs(id);
  if (Object.keys(inputs).length > 0) {
    ask(inputs);
    return false;
  }
  await post(`/api/workflows/${enc(id)}/run`);
  return true;
}

export function RunInputsForm({
  id,
  inputs,
  onDone,
  onCancel,
}: {
  id: string;
  inputs: Record<string, DeclaredInput>;
  onDone(): void;
  onCancel(): void;
}) {
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(Object.entries(inputs).map(([name, spec]) => [name, spec.default ?? ''])),
  );
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="run-inputs"
      aria-label="Run inputs"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        try {
          // An empty optional field means "use the default": it is left out.
          const given = Object.fromEntries(Object.entries(values).filter(([name, v]) => v !== '' || inputs[name]?.required));
          await post(`/api/workflows/${enc(id)}/run`, { inputs: given });
          onDone();
        } catch (err) {
          setError((err as Error).message);
        } finally {
          setBusy(false);
        }
      }}
    >
      <p class="muted small">This workflow takes inputs; each job gets them as WEFT_INPUT_&lt;NAME&gt;.</p>
      {Object.entries(inputs).map(([name, spec]) => (
        <label key={name} class="input-row">
          <span>
            {name}
            {spec.required ? ' (required)' : ''}
          </span>
          <input
            type="text"
            name={name}
            required={spec.required === true}
            placeholder={spec.default ?? ''}
            value={values[name] ?? ''}
            onInput={(e) => setValues({ ...values, [name]: e.currentTarget.value })}
          />
          {spec.description && <span class="muted small">{spec.description}</span>}
        </label>
      ))}
      {error && <p class="error">{error}</p>}
      <div class="toolbar">
        <button type="submit" disabled={busy}>
          Start run
        </button>
        <button type="button" onClick={onCancel}>
          Back
        </button>
      </div>
    </form>
  );
}
