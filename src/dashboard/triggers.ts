/** How the dashboard names what starts a workflow's runs; no DOM, so unit tests read it as it is. */
/**
 * A workflow's trigger as a reader wants it (README "Dashboard"): `on.schedule` written as the crons
 * it fires on (`schedule 0 2 * * * (Europe/Paris)`) instead of the mapping the server keeps as text,
 * the rest (`push, pull_request`) as written.
 */
export function triggerText(trigger: string): string {
  return trigger.replace(/schedule: \[([^\]]*)\]/g, (_all, list: string) => {
    const crons = [...list.matchAll(/\{cron: ([^,}]+)(?:, timezone: ([^,}]+))?[^}]*\}/g)].map((m) => (m[2] ? `${m[1]!.trim()} (${m[2].trim()})` : m[1]!.trim()));
    return crons.length > 0 ? `schedule ${crons.join('; ')}` : 'schedule';
  });
}
