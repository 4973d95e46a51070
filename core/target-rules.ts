import { cloudRabbitmqVersion, topologyVersionProblem } from './cloud-releases';
import type { CloudProvider, PriceCatalog } from './cost-catalog';
import { PlanIssue, PlanValidationError } from './errors';
import type { Plan } from './plan';

/**
 * What a cloud target needs from a plan beyond the plan schema: every cluster names its instance type, the
 * price catalog knows that type (so the run can be priced: the point of a cloud run), and on AWS the type is
 * x86-64; its RabbitMQ version is one the target installs (core/cloud-releases.ts), and mirrored queues run on 3.x. The same rules serve `rmqbench validate --target` and the workflow's ValidatePlan state, so a plan
 * is refused before anything is created. Pure: the catalog is passed in.
 */

/** Azure sizes are `Standard_<name>` in ARM templates; the catalog keys them without the prefix (as the Retail Prices API's armSkuName minus `Standard_`). */
const AZURE_SIZE_PREFIX = 'Standard_';

/** The catalog's key for an instance type: AWS types as written, Azure sizes without `Standard_`. */
export function catalogInstanceType(provider: CloudProvider, instanceType: string): string {
  return provider === 'azure' && instanceType.startsWith(AZURE_SIZE_PREFIX) ? instanceType.slice(AZURE_SIZE_PREFIX.length) : instanceType;
}

/** The VM size an Azure template takes (`Standard_F4s_v2`), from either spelling. */
export function azureVmSize(instanceType: string): string {
  return instanceType.startsWith(AZURE_SIZE_PREFIX) ? instanceType : `${AZURE_SIZE_PREFIX}${instanceType}`;
}

/**
 * Whether an AWS instance type runs on an Arm (Graviton) processor. In an EC2 type name the family letters and the
 * generation digit are followed by attribute letters, where `g` means AWS Graviton
 * (https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html, "Additional capabilities": g);
 * `a1` is the first-generation Arm family, which predates that convention.
 */
export function isArmInstanceType(instanceType: string): boolean {
  const family = instanceType.toLowerCase().split('.')[0] ?? '';
  if (family === 'a1') return true;
  const attributes = /^[a-z]+\d+([a-z-]*)$/.exec(family)?.[1] ?? '';
  return attributes.includes('g');
}

/** The types the catalog prices for a provider, sorted. */
function knownInstanceTypes(catalog: PriceCatalog, provider: CloudProvider): string[] {
  return [...new Set(catalog.instances.filter((price) => price.provider === provider).map((price) => price.instanceType))].sort();
}

/** Every problem that keeps `plan` from running on `target`; none for the local target, which ignores instance types. */
export function targetProblems(plan: Plan, target: string, catalog: PriceCatalog): PlanIssue[] {
  if (target !== 'aws' && target !== 'azure') return [];
  const provider: CloudProvider = target;
  const known = knownInstanceTypes(catalog, provider);
  const issues: PlanIssue[] = [];
  plan.clusters.forEach((cluster, index) => {
    const release = cloudRabbitmqVersion(provider, cluster.rabbitmqVersion);
    if ('error' in release) {
      issues.push({ path: `clusters[${index}].rabbitmqVersion`, message: release.error, value: cluster.rabbitmqVersion });
    } else {
      const problem = topologyVersionProblem(cluster.topology, release.version, cluster.rabbitmqVersion === undefined);
      if (problem) issues.push({ path: `clusters[${index}].topology.type`, message: problem, value: cluster.topology.type });
    }
    const path = `clusters[${index}].instanceType`;
    const example = provider === 'aws' ? 'c5.xlarge' : 'Standard_F4s_v2';
    if (cluster.instanceType === undefined) {
      issues.push({ path, message: `target ${target} needs the nodes' instance type (e.g. "${example}"), so that the run can be priced; the price catalog knows ${known.join(', ')}` });
      return;
    }
    if (provider === 'aws' && isArmInstanceType(cluster.instanceType)) {
      issues.push({
        path,
        message: "is an Arm (Graviton) type, but Team RabbitMQ's RPM repositories provide x86-64 Erlang packages only: use an x86-64 type such as c5.xlarge or m5.xlarge",
        value: cluster.instanceType,
      });
      return;
    }
    if (!known.includes(catalogInstanceType(provider, cluster.instanceType))) {
      issues.push({
        path,
        message: `the price catalog shipped with rmqbench (core/data/prices.json) has no ${provider} price for this type, so the run could not be priced; known: ${known.join(', ')}`,
        value: cluster.instanceType,
      });
    }
  });
  return issues;
}

/** Throws PlanValidationError naming every field a cloud target refuses. */
export function assertPlanRunsOnTarget(plan: Plan, target: string, catalog: PriceCatalog, source: string): void {
  const issues = targetProblems(plan, target, catalog);
  if (issues.length > 0) throw new PlanValidationError(`${source} (target ${target})`, issues);
}
