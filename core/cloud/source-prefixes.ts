/**
 * Which source address prefixes open a cluster to the world. The same rule is written twice: here, where
 * the controller refuses a deployment before it starts, and in bicep/main.bicep (`worldOpenSourceNames`,
 * `minimumSourcePrefixLength`, checked with `fail()`), for deployments made by hand. test/bicep keeps the
 * two in step. Pure: no I/O.
 */

/**
 * NSG source names that admit everyone, lower-cased. `*`, `Internet` and `Any` are the wildcard and the
 * Internet service tag; `AzureCloud` (and its regional forms `AzureCloud.<region>`) is the address space of
 * every Azure customer's VMs, so it admits anyone who rents one.
 * https://learn.microsoft.com/azure/virtual-network/service-tags-overview (Internet, AzureCloud)
 */
export const WORLD_OPEN_SOURCE_NAMES: readonly string[] = ['*', 'internet', 'any', 'azurecloud'];

/**
 * Prefixes shorter than this are refused: a /7 already holds 1/128 of an address family (half of the IPv4
 * internet is `0.0.0.0/1`, and two such halves are `0.0.0.0/0`), so they are the world in all but name.
 * A /8 (16.7 million IPv4 addresses, e.g. a private 10.0.0.0/8 reached through a peering) is still
 * accepted: it names one organisation's or one network's space, not everyone's.
 */
export const MINIMUM_SOURCE_PREFIX_LENGTH = 8;

/** Why `prefix` opens the cluster to the world, or undefined when it does not. */
export function worldOpenReason(prefix: string): string | undefined {
  const name = prefix.trim().toLowerCase();
  if (WORLD_OPEN_SOURCE_NAMES.includes(name)) {
    return name === 'azurecloud'
      ? 'the AzureCloud service tag admits every Azure customer'
      : `"${prefix}" admits every address`;
  }
  if (name.startsWith('azurecloud.')) return `the ${prefix} service tag admits every Azure customer in that region`;
  const slash = name.lastIndexOf('/');
  if (slash >= 0) {
    const length = Number(name.slice(slash + 1));
    if (Number.isInteger(length) && length < MINIMUM_SOURCE_PREFIX_LENGTH) {
      return length === 0
        ? `"${prefix}" admits every address`
        : `a /${length} holds at least 1/128 of its address family`;
    }
  }
  return undefined;
}

/**
 * Refuses prefixes that open the cluster to the world, naming each one; `parameter` is the template
 * parameter they were given in.
 */
export function assertNoWorldOpenSourcePrefixes(
  prefixes: readonly string[],
  parameter = 'allowedSourceAddressPrefixes',
): void {
  const refused = prefixes.flatMap((prefix) => {
    const reason = worldOpenReason(prefix);
    return reason ? [`${prefix} (${reason})`] : [];
  });
  if (refused.length > 0) {
    throw new Error(
      `${parameter} must not open the cluster to the world; refused: ${refused.join(', ')}. ` +
        `Give the addresses that need the cluster, e.g. your own address as x.x.x.x/32 ` +
        `(prefixes of /${MINIMUM_SOURCE_PREFIX_LENGTH} or longer).`,
    );
  }
}
