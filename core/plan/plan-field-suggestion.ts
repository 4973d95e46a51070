import type { z } from 'zod';

/**
 * "Did you mean" for an unknown plan field: the known fields of the object at `path` in the plan schema, and the one a
 * misspelling most likely meant. Walks zod's schema definitions (object shapes, through optional/default/pipe
 * wrappers, arrays and unions), so the suggestions follow the schema without a list of its own.
 */
export function knownFieldsAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  const fields = new Set<string>();
  const visit = (node: z.core.$ZodType, rest: readonly PropertyKey[], depth: number): void => {
    if (depth > 40) return;
    const def = node._zod.def as unknown as Record<string, unknown> & { type: string };
    switch (def.type) {
      case 'optional':
      case 'nullable':
      case 'default':
      case 'prefault':
      case 'readonly':
      case 'catch':
      case 'nonoptional':
        visit(def.innerType as z.core.$ZodType, rest, depth + 1);
        return;
      case 'pipe':
        visit(def.in as z.core.$ZodType, rest, depth + 1);
        return;
      case 'lazy':
        visit((def.getter as () => z.core.$ZodType)(), rest, depth + 1);
        return;
      case 'union':
        for (const option of def.options as z.core.$ZodType[]) visit(option, rest, depth + 1);
        return;
      case 'intersection':
        visit(def.left as z.core.$ZodType, rest, depth + 1);
        visit(def.right as z.core.$ZodType, rest, depth + 1);
        return;
      case 'array':
        if (rest.length > 0 && typeof rest[0] === 'number')
          visit(def.element as z.core.$ZodType, rest.slice(1), depth + 1);
        return;
      case 'object': {
        const shape = def.shape as Record<string, z.core.$ZodType>;
        if (rest.length === 0) {
          for (const key of Object.keys(shape)) fields.add(key);
          return;
        }
        const next = shape[String(rest[0])];
        if (next) visit(next, rest.slice(1), depth + 1);
        return;
      }
      default:
        return;
    }
  };
  visit(schema, path, 0);
  return [...fields];
}

/** Edit distance (insertions, deletions, substitutions, transpositions of neighbours), case-insensitive. */
function distance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const rows: number[][] = Array.from({ length: s.length + 1 }, (_, i) =>
    Array.from({ length: t.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[s.length]![t.length]!;
}

/**
 * The known field an unknown one most likely meant: the nearest by edit distance when it is within a third of the
 * longer name (at least 1, at most 3 edits), or the one it is a prefix of (`messageSize` for `messageSizeBytes`).
 */
export function suggestField(unknown: string, known: readonly string[]): string | undefined {
  let best: { field: string; edits: number } | undefined;
  for (const field of known) {
    const edits = distance(unknown, field);
    if (best === undefined || edits < best.edits) best = { field, edits };
  }
  if (best && best.edits <= Math.min(3, Math.max(1, Math.floor(Math.max(unknown.length, best.field.length) / 3))))
    return best.field;
  const prefixed = known.filter(
    (field) => unknown.length >= 4 && field.toLowerCase().startsWith(unknown.toLowerCase()),
  );
  return prefixed.length === 1 ? prefixed[0] : undefined;
}
