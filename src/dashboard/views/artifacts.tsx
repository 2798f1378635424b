/**
 * Artifacts of a run (README "Artifacts"): the job panel lists its job's, the run view all of the
 * run's, each a download link. Without a token the link is a plain one (the browser streams the file
 * to disk); with one, the click fetches the file with the token and saves it from memory, since a
 * link cannot carry an Authorization header.
 */
import { useEffect, useState } from 'preact/hooks';
import { formatBytes, type ArtifactView } from '../../domain/artifacts.js';
import { api, authedFetch, currentToken, enc, SERVER } from '../api';
import { ErrorLine } from './common';

function artifactPath(wf: string, run: number, a: ArtifactView): string {
  return `/api/workflows/${enc(wf)}/runs/${run}/artifacts/${enc(a.job_id)}/${enc(a.name)}`;
}

/** Fetches `path` with the page's token and saves it as `filename` (a link cannot carry the token). */
export async function saveDownload(path: string, filename: string): Promise<void> {
  const res = await authedFetch(path);
  if (!res.ok) throw new Error(`download failed: ${res.status} ${res.statusText}`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.rel = 'noopener';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * The artifacts of run `run` (of job `job` only, when given). `version` changes when the caller knows
 * more may exist (a job's state changed), which loads the list again.
 */
export function Artifacts({ wf, run, job, version }: { wf: string; run: number; job?: string; version: string }) {
  const [list, setList] = useState<ArtifactView[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let gone = false;
    setError(null);
    api<{ artifacts: ArtifactView[] }>(`/api/workflows/${enc(wf)}/runs/${run}/artifacts${job ? `?job=${enc(job)}` : ''}`)
      .then((r) => !gone && setList(r.artifacts))
      .catch((err) => !gone && setError(err));
    return () => {
      gone = true;
    };
  }, [wf, run, job, version]);

  if (error) return <ErrorLine error={error} />;
  if (list === null) return <p class="muted small">loading…</p>;
  if (list.length === 0) return <p class="muted artifacts-none">none</p>;
  return (
    <ul class="artifacts" aria-label={job ? `Artifacts of ${job}` : `Artifacts of run ${run}`}>
      {list.map((a) => {
        const path = artifactPath(wf, run, a);
        const filename = a.name.slice(a.name.lastIndexOf('/') + 1);
        return (
          <li key={`${a.job_id}/${a.name}`}>
            <a
              class="artifact"
              href={SERVER + path}
              download={filename}
              title={`SHA-256 ${a.sha256}`}
              onClick={(e) => {
                if (currentToken() === null) return;
                e.preventDefault();
                saveDownload(path, filename).catch(setError);
              }}
            >
              {job ? a.name : `${a.job_id}/${a.name}`}
            </a>{' '}
            <span class="muted small">{formatBytes(a.size)}</span>
          </li>
        );
      })}
    </ul>
  );
}
