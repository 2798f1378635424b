/**
 * Approval gates (README "Approvals") over real HTTP against an in-process server: who may decide
 * (admin and approver tokens; the decision names the token), the timeout found by the reaper's pass
 * on the engine's injected clock (no waiting), and the live events that announce the wait and the
 * decision.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashToken, parseTokenHash, type Role, type TokenEntry } from '../../src/domain/access.js';
import { WorkflowClient } from '../../src/client/index.js';
import { client, request } from '../helpers/http.js';
import { json, openSse, type SseEvent } from '../helpers/sse.js';
import { startInProcess } from '../helpers/server.js';

const TOKENS: Record<Role, string> = {
  admin: 'admin-token-0123456789abcdef',
  worker: 'worker-token-0123456789abcdef',
  read: 'read-token-0123456789abcdef',
  approver: 'approver-token-0123456789abcdef',
  trigger: 'trigger-token-0123456789abcdef',
};
const entries = (): TokenEntry[] => (Object.keys(TOKENS) as Role[]).map((role) => ({ name: `${role}-1`, role, hash: parseTokenHash(hashToken(TOKENS[role]))! }));
const bearer = (role: Role) => ({ authorization: `Bearer ${TOKENS[role]}` });

const GATED = { id: 'gated', jobs: { gate: { approval: { message: 'ok?', timeout_secs: 600 } }, after: { needs: 'gate', run: 'true' } } };

test('admin and approver tokens decide, and the decision names the token; read and worker tokens are refused', async (t) => {
  const s = await startInProcess({ tokens: entries() });
  t.after(() => s.close());
  const admin = new WorkflowClient({ baseUrl: s.url, token: TOKENS.admin });
  await admin.createWorkflow(GATED);
  await admin.runWorkflow('gated');
  for (const role of ['read', 'worker'] as const) {
    const r = await request('POST', `${s.url}/api/workflows/gated/runs/1/jobs/gate/approve`, {}, bearer(role));
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error, 'forbidden');
    assert.match(r.body.message, /needs admin or approver/);
  }
  assert.equal((await request('POST', `${s.url}/api/workflows/gated/runs/1/jobs/gate/approve`, {})).status, 401);
  // An approver reads like a read token, and may do nothing else.
  assert.equal((await request('GET', `${s.url}/api/workflows/gated/status`, undefined, bearer('approver'))).status, 200);
  assert.equal((await request('POST', `${s.url}/api/workflows/gated/cancel`, undefined, bearer('approver'))).status, 403);
  assert.equal((await request('POST', `${s.url}/api/workflows/gated/run`, undefined, bearer('approver'))).status, 403);

  const approver = new WorkflowClient({ baseUrl: s.url, token: TOKENS.approver });
  const out = await approver.approveJob('gated', 1, 'gate', { comment: 'fine' });
  assert.deepEqual([out.decision, out.job.state, out.job.approval?.decided_by, out.job.approval?.comment], ['approved', 'success', 'approver-1', 'fine']);
  await assert.rejects(approver.rejectJob('gated', 1, 'gate'), (err: any) => err.status === 409 && err.error === 'job_not_awaiting_approval');

  await admin.cancelWorkflow('gated');
  await admin.runWorkflow('gated');
  const rejected = await admin.rejectJob('gated', 2, 'gate');
  assert.deepEqual([rejected.job.state, rejected.job.approval?.decided_by, rejected.job.error], ['failed', 'admin-1', 'approval rejected by admin-1']);
});

test('the reaper pass fails a wait past its timeout_secs on the engine clock, and not a moment before', async (t) => {
  let now = 1_000_000;
  const s = await startInProcess({ now: () => now });
  t.after(() => s.close());
  const api = client(s.url);
  await api.createWorkflow(GATED);
  await api.run('gated');
  const gate = (await api.jobState('gated', 'gate')).approval;
  assert.deepEqual([gate.requested_at_ms, gate.deadline_ms], [1_000_000, 1_600_000]);
  now = 1_600_000;
  assert.equal((await s.engine.housekeeping.reap()).approvalsTimedOut, 0, 'at its deadline the wait is still on');
  assert.equal((await api.jobState('gated', 'gate')).state, 'awaiting_approval');
  now = 1_600_001;
  assert.equal((await s.engine.housekeeping.reap()).approvalsTimedOut, 1);
  const doc = await api.status('gated');
  assert.equal(doc.status, 'failed');
  const ended = doc.jobs.find((j: any) => j.id === 'gate');
  assert.deepEqual([ended.state, ended.approval.decision, ended.approval.decided_at_ms, ended.error], ['failed', 'timed_out', 1_600_001, 'approval timed out after 600s with no decision']);
  assert.equal(doc.jobs.find((j: any) => j.id === 'after').state, 'skipped');
});

test('live events announce the wait and the decision, on the workflow stream and the list stream', async (t) => {
  const s = await startInProcess();
  t.after(() => s.close());
  const api = client(s.url);
  await api.createWorkflow(GATED);
  const events = await openSse(`${s.url}/api/workflows/gated/events`);
  t.after(() => events.close());
  const list = await openSse(`${s.url}/api/events`);
  t.after(() => list.close());
  const gateEvents = (evs: SseEvent[]) => evs.filter((e) => e.event === 'job' && json(e).id === 'gate').map(json);

  await api.run('gated');
  const waiting = await events.waitFor((evs) => gateEvents(evs).some((j) => j.state === 'awaiting_approval'), 'the wait announced');
  const w = gateEvents(waiting).find((j) => j.state === 'awaiting_approval');
  assert.equal(w.status, 'queued');
  assert.equal(w.approval.message, 'ok?');
  await list.waitFor((evs) => evs.some((e) => e.event === 'workflow' && json(e).id === 'gated' && json(e).job_counts.awaiting_approval === 1), 'the list counts the wait');

  // The decision is announced before its answer is sent (streams also look again every second, which
  // must not be what carries it).
  const told: string[] = [];
  s.engine.events.on('job', (c) => told.push(c.job_id));
  const r = await api.post('/api/workflows/gated/runs/1/jobs/gate/approve', { comment: 'go' });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(new Set(told), new Set(['gate', 'after']), 'the engine announced the decided gate and what it queued');
  const decided = await events.waitFor((evs) => gateEvents(evs).some((j) => j.approval?.decision === 'approved'), 'the decision announced');
  const d = gateEvents(decided).find((j) => j.approval?.decision === 'approved');
  assert.deepEqual([d.state, d.approval.comment], ['success', 'go']);
  await events.waitFor((evs) => evs.some((e) => e.event === 'job' && json(e).id === 'after' && json(e).state === 'queued'), 'the dependent queued');
});
