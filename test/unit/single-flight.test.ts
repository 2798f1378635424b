/**
 * SingleFlight (src/util/single-flight.ts), the one-pass-at-a-time loop shared by the engine's
 * settling, outbox, call and notification passes: calls during a pass share it and make it run once
 * more; a call landing after the last round began its finish starts a new pass rather than sharing one
 * that will not look again; a failing round rejects its callers and leaves the next call free.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SingleFlight } from '../../src/util/single-flight.js';

/** A round that waits for `release()` each time, counting how many rounds started. */
function gatedRounds() {
  let rounds = 0;
  let open: (() => void) | null = null;
  const round = () => {
    rounds++;
    return new Promise<void>((resolve) => {
      open = resolve;
    });
  };
  const release = () => {
    const o = open;
    open = null;
    o?.();
  };
  return { round, release, rounds: () => rounds };
}

/** Lets queued promise callbacks run. */
const ticks = async (n = 5) => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};

test('calls during a pass share it and make it run exactly one more round', async () => {
  const g = gatedRounds();
  const sf = new SingleFlight(g.round);
  const first = sf.run();
  const second = sf.run();
  const third = sf.run();
  assert.equal(second, first, 'a call during a pass shares its promise');
  assert.equal(third, first);
  assert.equal(g.rounds(), 1);
  g.release();
  await ticks();
  assert.equal(g.rounds(), 2, 'the calls during the first round (however many) make one more round');
  g.release();
  await first;
  assert.equal(g.rounds(), 2);
  assert.equal(sf.busy, false);
});

test('a call made as the last round finishes starts a new pass instead of sharing the ending one', async () => {
  // However many promise hops after the round's end the call lands, it must get a round of its own.
  for (let hops = 0; hops < 8; hops++) {
    let rounds = 0;
    let late: Promise<void> | null = null;
    const sf: SingleFlight = new SingleFlight(async () => {
      rounds++;
      if (rounds > 1) return;
      let p = Promise.resolve();
      for (let i = 0; i < hops; i++) p = p.then(() => undefined);
      void p.then(() => {
        late = sf.run();
      });
    });
    await sf.run();
    await ticks(20);
    assert.ok(late, `the late call was made (${hops} hops)`);
    await late;
    assert.equal(rounds, 2, `the call ${hops} hops after the round got a round of its own`);
  }
});

test('a failing round rejects its callers; the next call starts afresh', async () => {
  let fail = true;
  let rounds = 0;
  const sf = new SingleFlight(async () => {
    rounds++;
    if (fail) throw new Error('store away');
  });
  await assert.rejects(sf.run(), /store away/);
  assert.equal(sf.busy, false);
  fail = false;
  await sf.run();
  assert.equal(rounds, 2);
});

test('goOn false stops the repeat round (an owner that is stopping)', async () => {
  const g = gatedRounds();
  let going = true;
  const sf = new SingleFlight(g.round, () => going);
  const p = sf.run();
  void sf.run();
  going = false;
  g.release();
  await p;
  assert.equal(g.rounds(), 1);
});
