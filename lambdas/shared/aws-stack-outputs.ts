// A cluster stack's outputs as the functions read them, free of SDK clients so that any function may import it.

/**
 * The load generator's instance id among the cluster stack's outputs (LoadGenerator's `InstanceId` output, prefixed by
 * CDK).
 */
export function loadGeneratorInstanceId(outputs: Record<string, string>): string | undefined {
  return Object.entries(outputs).find(([key]) => /InstanceId(?!s)/.test(key))?.[1] || undefined;
}

/**
 * Every load generator's instance id, by index (issue 27): the `InstanceIds` output (comma-separated, the controller's
 * cluster template lists the LoadGeneratorCount instances it launched), or the one `InstanceId` of a stack without it
 * (a Kafka template, a stack launched before it). Empty when the stack has neither.
 */
export function loadGeneratorInstanceIds(outputs: Record<string, string>): string[] {
  const all = Object.entries(outputs).find(([key]) => key.includes('InstanceIds'))?.[1];
  if (all) return all.split(',').filter((id) => id !== '');
  const one = loadGeneratorInstanceId(outputs);
  return one ? [one] : [];
}
