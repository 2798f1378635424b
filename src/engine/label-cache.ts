import { isSubset } from '../domain/labels.js';
import type { LabelSet, Store } from '../store/store.js';

/**
 * The label sets jobs were created with, kept in memory so that a claim does not read them every
 * time. They are append-only: a refresh reads only the sets added since the last one. Sets this
 * process adds are known at once; sets another server adds are picked up within `maxAgeMs`.
 */
export class LabelSetCache {
  private sets: LabelSet[] = [];
  private seq = 0;
  private refreshedAt = -Infinity;
  private refreshing: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly maxAgeMs = 1000,
  ) {}

  /** Keys of the label sets a worker offering `labels` fits (the domain's subset rule). */
  async keysFitting(labels: readonly string[], nowMs: number): Promise<string[]> {
    if (nowMs - this.refreshedAt > this.maxAgeMs) await this.refresh(nowMs);
    const offered = new Set(labels);
    return this.sets.filter((s) => isSubset(s.labels, offered)).map((s) => s.key);
  }

  /** Sets may have been added elsewhere: the next claim reads what is new first. */
  invalidate(): void {
    this.refreshedAt = -Infinity;
  }

  /** Sets just written by this process; later refreshes skip nothing because they go by sequence. */
  add(sets: readonly LabelSet[]): void {
    for (const s of sets) if (!this.sets.some((k) => k.key === s.key)) this.sets.push(s);
  }

  private refresh(nowMs: number): Promise<void> {
    this.refreshing ??= (async () => {
      try {
        const added = await this.store.read((r) => r.labelSetsSince(this.seq));
        for (const s of added) {
          this.seq = Math.max(this.seq, s.seq);
          if (!this.sets.some((k) => k.key === s.key)) this.sets.push({ key: s.key, labels: s.labels });
        }
        this.refreshedAt = nowMs;
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }
}
