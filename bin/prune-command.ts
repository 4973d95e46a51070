import type { PruneDecision, PruneSelection } from '../local/prune-runs';

/**
 * `--keep N` and `--older-than DAYS` exclude each other; both must be numbers of 0 or more. Throws with what is wrong.
 */
export function parsePruneSelection(values: {
  readonly keep?: string | undefined;
  readonly olderThan?: string | undefined;
}): PruneSelection {
  const { keep, olderThan } = values;
  if (keep !== undefined && olderThan !== undefined) {
    throw new Error(
      `use either --keep N or --older-than DAYS, not both (got --keep ${keep} --older-than ${olderThan})`,
    );
  }
  if (keep !== undefined) {
    if (!/^\d+$/.test(keep)) throw new Error(`--keep must be a whole number of run folders, 0 or more (got "${keep}")`);
    return { keep: Number(keep) };
  }
  if (olderThan !== undefined) {
    if (!/^\d+(\.\d+)?$/.test(olderThan))
      throw new Error(`--older-than must be a number of days, 0 or more, e.g. 7 or 0.5 (got "${olderThan}")`);
    return { olderThanDays: Number(olderThan) };
  }
  return {};
}

export function formatPrune(decisions: readonly PruneDecision[], dryRun: boolean, json: boolean): string {
  const deleted = decisions.filter((d) => d.delete);
  const kept = decisions.filter((d) => !d.delete);
  const freed = deleted.reduce((sum, d) => sum + d.bytes, 0);
  if (json) {
    return `${JSON.stringify(
      {
        dryRun,
        freedBytes: freed,
        deleted: deleted.map(({ runId, dir, startedAt, bytes }) => ({ runId, dir, startedAt, bytes })),
        kept: kept.map(({ runId, dir, startedAt, bytes, reason }) => ({ runId, dir, startedAt, bytes, reason })),
      },
      null,
      2,
    )}\n`;
  }
  const verb = dryRun ? 'would delete' : 'deleted';
  const lines = [
    ...deleted.map((d) => `${verb.padEnd(12)}  ${d.runId}  ${megabytes(d.bytes)}`),
    ...kept.map((d) => `${'kept'.padEnd(12)}  ${d.runId}: ${d.reason}`),
    `${deleted.length} run folder(s) ${verb} (${megabytes(freed)}${dryRun ? ' would be freed' : ' freed'}), ` +
      `${kept.length} kept`,
  ];
  return `${lines.join('\n')}\n`;
}

function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}
