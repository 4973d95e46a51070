/** Parses "3.13" / "3.10.8" / "4.1.2-1" into numbers; throws on anything else. */
export function parseRabbitmqVersion(version: string): { major: number; minor: number; patch: number } {
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(version.trim());
  if (!match) throw new Error(`not a RabbitMQ version: "${version}" (expected e.g. "3.13" or "4.1.2")`);
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3] ?? 0) };
}

/** Classic queue mirroring (`ha-mode` policies) was removed in RabbitMQ 4.0. */
export function supportsClassicMirroring(version: string): boolean {
  return parseRabbitmqVersion(version).major < 4;
}

/**
 * Classic queues honour `x-queue-mode: lazy` up to 3.11; "from RabbitMQ 3.12 and onwards, this lazy queue mode is
 * ignored" (rabbitmq-website docs/lazy-queues.md).
 */
export function honoursLazyQueueMode(version: string): boolean {
  const { major, minor } = parseRabbitmqVersion(version);
  return major < 3 || (major === 3 && minor < 12);
}

/** True when `installed` satisfies `wanted` ("3.10" matches 3.10.x; "3.10.8" only itself). */
export function versionMatches(wanted: string, installed: string): boolean {
  const want = parseRabbitmqVersion(wanted);
  const have = parseRabbitmqVersion(installed);
  const patchGiven = /^\d+\.\d+\.\d+/.test(wanted.trim());
  return want.major === have.major && want.minor === have.minor && (!patchGiven || want.patch === have.patch);
}
