/**
 * Maps keyed by names users choose: job ids, output names, env names, input names. `__proto__`,
 * `constructor` and `toString` are valid names, and a plain object mistakes them for its own machinery:
 * `o['__proto__'] = v` sets the prototype (the entry is lost), `o['constructor']` reads `Object` when
 * there is no such entry. So such maps are built without a prototype, and read through `own`, which
 * also holds for the ordinary objects JSON.parse makes.
 */

/** A map with no prototype, from `entries` (later entries win). */
export function keyed<V>(entries: Iterable<readonly [string, V]> = []): Record<string, V> {
  const out = Object.create(null) as Record<string, V>;
  for (const [k, v] of entries) out[k] = v;
  return out;
}

/** The entry `key` of `map` when it holds one of its own, else undefined (never an inherited member). */
export function own<V>(map: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(map, key) ? map[key] : undefined;
}
