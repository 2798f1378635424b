/** How the dashboard names what starts a workflow's runs; no DOM, so unit tests read it as it is. */
import type { RunSummary } from '../protocol/wire.js';

/**
 * A workflow's trigger as a reader wants it (README "Dashboard"): `on.schedule` written as the crons
 * it fires on (`schedule 0 2 * * * (Europe/Paris)`) instead of the mapping the server keeps as text;
 * `on.webhook` as `webhook` (never its settings), `on.event` as the events it listens for
 * (`event deployed, released`), `on.workflow_run` as the runs it follows (`after build (failure)`);
 * the rest (`push, pull_request`) as written.
 */
export function triggerText(trigger: string): string {
  return topLevelEntries(trigger).map(entryText).join(', ');
}

function entryText(entry: string): string {
  if (entry.startsWith('schedule: ')) {
    return entry.replace(/schedule: \[([^\]]*)\]/g, (_all, list: string) => {
      const crons = [...list.matchAll(/\{cron: ([^,}]+)(?:, timezone: ([^,}]+))?[^}]*\}/g)].map((m) => (m[2] ? `${m[1]!.trim()} (${m[2].trim()})` : m[1]!.trim()));
      return crons.length > 0 ? `schedule ${crons.join('; ')}` : 'schedule';
    });
  }
  // The secret's name and the filters are the workflow's settings, not what starts it.
  if (entry.startsWith('webhook: ')) return 'webhook';
  if (entry.startsWith('event: ')) return `event ${unlist(entry.slice('event: '.length))}`;
  if (entry.startsWith('workflow_run: ')) {
    const body = entry.slice('workflow_run: '.length);
    const workflows = /workflows: (\[[^\]]*\]|[^,}]+)/.exec(body)?.[1];
    const types = /types: (\[[^\]]*\]|[^,}]+)/.exec(body)?.[1];
    if (!workflows) return entry;
    const when = types ? unlist(types) : '';
    return `after ${unlist(workflows)}${when && when !== 'completed' ? ` (${when})` : ''}`;
  }
  return entry;
}

/** `[a, b]` or `a` as `a, b` or `a`. */
function unlist(text: string): string {
  const t = text.trim();
  return t.startsWith('[') && t.endsWith(']') ? t.slice(1, -1).trim() : t;
}

/** The entries of the server's compact `on` text (`push, schedule: [{…}], webhook: {…}`), split where no bracket is open. */
function topLevelEntries(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '[' || c === '{') depth++;
    else if ((c === ']' || c === '}') && depth > 0) depth--;
    else if (c === ',' && depth === 0 && text[i + 1] === ' ') {
      out.push(text.slice(start, i));
      start = i + 2;
    }
  }
  out.push(text.slice(start));
  return out;
}

/** What started a run, as the runs table and the run header say it (README "Dashboard"). */
export const TRIGGER_TEXT: Record<NonNullable<RunSummary['trigger']>, string> = {
  manual: 'manual',
  schedule: 'schedule',
  rerun: 're-run',
  webhook: 'webhook',
  event: 'event',
  workflow_run: 'after a run',
  call: 'call',
};

/** A run's trigger with the event it came with: `webhook push`, `event deployed`, `after a run`. */
export function runTriggerText(trigger: RunSummary['trigger'], eventName: string | null | undefined): string {
  if (trigger === null) return '';
  const base = TRIGGER_TEXT[trigger];
  if (eventName && (trigger === 'webhook' || trigger === 'event')) return `${base} ${eventName}`;
  return base;
}
