/**
 * Events between servers (src/engine/peers.ts; docs/architecture.md "Events between servers") over an
 * in-memory channel standing in for LISTEN/NOTIFY: job and log changes go out only while another
 * server wants them, a change held back is followed by "look again" once a server starts wanting
 * them, an interest lapses when it is not repeated, label sets and retry times always go out, and
 * a server sends one message at a time.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Peers, type PeerHandlers, type PeersOptions } from '../../src/engine/peers.js';
import type { JobChange, Store } from '../../src/store/store.js';
import { until } from '../helpers/http.js';

interface Sent {
  i: string;
  j?: unknown[];
  l?: unknown[];
  t?: number[];
  s?: 1;
  all?: 1;
  w?: 1;
}

/** Every listener hears every message, its sender's included, in the order they were published. */
class Channel {
  readonly sent: Sent[] = [];
  private readonly listeners = new Set<(payload: string) => void>();
  /** While set, a publish waits for it: a database slow to take messages. */
  gate: Promise<void> | null = null;
  /** Publishes begun, finished or not. */
  begun = 0;

  store(): Store {
    return {
      publish: async (payload: string) => {
        this.begun++;
        await this.gate;
        this.sent.push(JSON.parse(payload) as Sent);
        for (const l of this.listeners) l(payload);
      },
      listen: async (onMessage: (payload: string) => void) => {
        this.listeners.add(onMessage);
        return async () => {
          this.listeners.delete(onMessage);
        };
      },
    } as unknown as Store;
  }

  from(p: Peers): Sent[] {
    return this.sent.filter((m) => m.i === p.id);
  }
}

interface Heard {
  jobs: JobChange[];
  logs: JobChange[];
  times: number[];
  resyncs: number;
  labelSets: number;
}

async function peer(t: TestContext, channel: Channel, interested: () => boolean, opts: PeersOptions = {}) {
  const heard: Heard = { jobs: [], logs: [], times: [], resyncs: 0, labelSets: 0 };
  const handlers: PeerHandlers = {
    jobs: (c) => heard.jobs.push(...c),
    logs: (c) => heard.logs.push(c),
    wakeAt: (at) => heard.times.push(at),
    labelSets: () => heard.labelSets++,
    resync: () => heard.resyncs++,
    interested,
  };
  const p = new Peers(channel.store(), handlers, pino({ level: 'silent' }), opts);
  await p.start();
  t.after(() => p.close());
  return { p, heard };
}

const job = (job_id: string): JobChange => ({ workflow_id: 'w', run_number: 1, job_id });

/** The next message `p` sends that carries label sets: a marker that everything sent before it is out. */
async function marker(channel: Channel, p: Peers): Promise<Sent> {
  const before = channel.from(p).length;
  p.sendLabelSets();
  await until(() => channel.from(p).slice(before).some((m) => m.s === 1 || m.all === 1), 'the marker message', 5000, 2);
  return channel.from(p).slice(before).find((m) => m.s === 1 || m.all === 1)!;
}

test('job and log changes are not sent while no other server wants them; label sets and retry times are', async (t) => {
  const channel = new Channel();
  const a = await peer(t, channel, () => false);
  const b = await peer(t, channel, () => false);
  a.p.sendJobs([job('x')]);
  a.p.sendLogs(job('x'));
  a.p.sendWakeAt(12345);
  const m = await marker(channel, a.p);
  assert.equal(channel.from(a.p).filter((s) => s.j || s.l || s.all).length, 0, JSON.stringify(channel.sent));
  assert.deepEqual(m.t, [12345]);
  assert.deepEqual(b.heard.jobs, []);
  assert.deepEqual(b.heard.logs, []);
  assert.deepEqual(b.heard.times, [12345]);
  assert.equal(b.heard.labelSets, 1);
});

test('once another server says it wants them, job and log changes reach it', async (t) => {
  const channel = new Channel();
  const a = await peer(t, channel, () => false);
  const b = await peer(t, channel, () => true);
  b.p.wanted();
  await until(() => channel.from(b.p).some((m) => m.w === 1), 'B says it wants changes', 5000, 2);
  a.p.sendJobs([job('x'), job('y')]);
  a.p.sendLogs(job('x'));
  await until(() => b.heard.jobs.length === 2 && b.heard.logs.length === 1, 'B hears the changes', 5000, 2);
  assert.deepEqual(b.heard.jobs.map((c) => c.job_id), ['x', 'y']);
  assert.equal(b.heard.resyncs, 0, 'nothing was held back, so nothing to look at again');
  assert.deepEqual(a.heard.jobs, [], 'A does not hear its own messages');
});

test('a server that starts wanting changes after one was held back is told to look again', async (t) => {
  const channel = new Channel();
  const a = await peer(t, channel, () => false);
  const b = await peer(t, channel, () => true);
  // A claim on B may have looked just before this change and begun waiting just after it.
  a.p.sendJobs([job('x')]);
  b.p.wanted();
  await until(() => b.heard.resyncs === 1, 'B told to look again', 5000, 2);
  assert.ok(channel.from(a.p).some((m) => m.all === 1));
  // Told once: the next change goes out as itself.
  a.p.sendJobs([job('y')]);
  await until(() => b.heard.jobs.length === 1, 'B hears the next change', 5000, 2);
  assert.equal(b.heard.resyncs, 1);
});

test('a server says it wants changes again while it does, and its interest lapses once it stops', async (t) => {
  const channel = new Channel();
  let interested = true;
  // The lapse time is a hundred repetitions long: only a stalled machine lets it pass between two.
  const opts = { announceMs: 20, interestTtlMs: 2000 };
  const a = await peer(t, channel, () => false, opts);
  const b = await peer(t, channel, () => interested, opts);
  const started = performance.now();
  b.p.wanted();
  await until(() => performance.now() - started > 1.5 * opts.interestTtlMs, 'past the lapse time of the first', 10_000, 50);
  assert.ok(channel.from(b.p).filter((m) => m.w === 1).length > 2, 'said again');
  a.p.sendJobs([job('x')]);
  await until(() => b.heard.jobs.length === 1, 'B, still interested, hears the change', 5000, 2);
  interested = false;
  // Once B stops repeating itself, A stops sending: each try sends a marker and sees whether a change went with it.
  await until(
    async () => {
      a.p.sendJobs([job('later')]);
      const m = await marker(channel, a.p);
      return m.j === undefined;
    },
    'A holds changes back once B no longer wants them',
    10_000,
    10,
  );
  const said = channel.from(b.p).filter((m) => m.w === 1).length;
  const m = await marker(channel, b.p);
  assert.equal(m.w, undefined, 'B no longer says it');
  assert.equal(channel.from(b.p).filter((x) => x.w === 1).length, said);
});

test('while a message is on its way, what comes meanwhile is gathered into the next one', async (t) => {
  const channel = new Channel();
  const a = await peer(t, channel, () => false);
  const b = await peer(t, channel, () => false);
  let open!: () => void;
  channel.gate = new Promise((resolve) => (open = resolve));
  a.p.sendWakeAt(1);
  await until(() => channel.begun === 1, 'the first message on its way', 5000, 2);
  // Each of these would go on its own, FLUSH_MS apart, if nothing waited for the first message.
  for (const at of [2, 3, 4]) {
    a.p.sendWakeAt(at);
    const since = performance.now();
    await until(() => performance.now() - since > 20, 'longer than a gathering', 5000, 5);
  }
  assert.equal(channel.begun, 1, 'nothing else sent while the first is on its way');
  channel.gate = null;
  open();
  await until(() => b.heard.times.length === 4, 'all four retry times heard', 5000, 2);
  assert.deepEqual(channel.from(a.p).map((m) => m.t), [[1], [2, 3, 4]]);
});
