import { DEFAULT_LOAD_GENERATOR_TYPE } from '../cost/estimate';
import { groupScenariosByCluster, type Plan } from '../plan/plan';
import { planOnTarget } from '../plan/plan-target';

/**
 * The vCPUs a plan's clusters hold at once on AWS, against the account's On-Demand vCPU quota, before anything is
 * launched. EC2 limits running On-Demand instances by vCPUs per instance family group and Region; the Standard group
 * (A, C, D, H, I, M, R, T and Z families: every type rmqbench's plans and load generators use) is Service Quotas'
 * `ec2` quota `L-1216C47A`, "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"
 * (https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html, "On-Demand Instance quotas"). A new
 * account's value can be as low as 5 vCPUs, below one c5n.4xlarge load generator (16): CloudFormation then fails the
 * cluster stack with VcpuLimitExceeded after the user has paid for its other resources. Pure: the CLI reads the quota
 * and the types' vCPUs (bin/vcpu-quota-check.ts).
 */

export const STANDARD_VCPU_QUOTA = {
  serviceCode: 'ec2',
  quotaCode: 'L-1216C47A',
  name: 'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances',
} as const;

/**
 * Families whose first letter is one of the Standard group's but which have quotas of their own (Inf, DL, Trn, HPC,
 * Mac, high-memory U): ec2-instance-quotas.html lists them apart.
 */
const OWN_QUOTA_FAMILIES = /^(inf|dl|trn|hpc|mac|u-)/;

/** Whether an instance type counts against the Standard On-Demand vCPU quota. */
export function isStandardInstanceType(instanceType: string): boolean {
  const family = instanceType.toLowerCase();
  return /^[acdhimrtz]/.test(family) && !OWN_QUOTA_FAMILIES.test(family);
}

/** One cluster as the controller launches it on AWS: its nodes and load generators, by instance type. */
export interface LaunchedInstances {
  readonly cluster: string;
  readonly instances: readonly { readonly instanceType: string; readonly count: number }[];
}

/**
 * The instances each cluster of the plan launches on AWS: its nodes (or brokers, servers) of the plan's type, and its
 * load generators (the plan cluster's `loadGenerators`, of the controller's default type).
 */
export function launchedInstances(plan: Plan): LaunchedInstances[] {
  return groupScenariosByCluster(planOnTarget(plan, 'aws')).map((group) => ({
    cluster: group.scenarios[0]?.cluster.name ?? group.key,
    instances: [
      ...(group.instanceType ? [{ instanceType: group.instanceType, count: group.nodes }] : []),
      { instanceType: DEFAULT_LOAD_GENERATOR_TYPE.aws, count: group.loadGenerators ?? 1 },
    ],
  }));
}

export interface VcpuNeed {
  /** Standard-group vCPUs of the `concurrency` largest clusters together: the most the run holds at once. */
  readonly peakVcpus: number;
  /** Each cluster's Standard-group vCPUs, in plan order. */
  readonly clusters: readonly { readonly cluster: string; readonly vcpus: number }[];
  /** Instance types whose vCPU count was not given (left out of the figures). */
  readonly unknownTypes: readonly string[];
}

/**
 * The Standard-group vCPUs the run holds at most at once: the controller runs `concurrency` clusters at a time
 * (BenchmarkController's maxConcurrency), so at most the `concurrency` largest together.
 */
export function vcpuNeed(
  launched: readonly LaunchedInstances[],
  vcpusOf: ReadonlyMap<string, number>,
  concurrency: number,
): VcpuNeed {
  const unknown = new Set<string>();
  const clusters = launched.map(({ cluster, instances }) => ({
    cluster,
    vcpus: instances
      .filter(({ instanceType }) => isStandardInstanceType(instanceType))
      .reduce((sum, { instanceType, count }) => {
        const vcpus = vcpusOf.get(instanceType);
        if (vcpus === undefined) unknown.add(instanceType);
        return sum + (vcpus ?? 0) * count;
      }, 0),
  }));
  const peakVcpus = clusters
    .map(({ vcpus }) => vcpus)
    .sort((a, b) => b - a)
    .slice(0, Math.max(1, concurrency))
    .reduce((sum, vcpus) => sum + vcpus, 0);
  return { peakVcpus, clusters, unknownTypes: [...unknown].sort() };
}

/**
 * Why the run would exceed the quota (with what to do), or undefined when it fits. Instances of the account already
 * running count against the same quota, so a fit is not a promise.
 */
export function vcpuQuotaProblem(need: VcpuNeed, quota: number, region: string): string | undefined {
  if (need.peakVcpus <= quota) return undefined;
  const largest = [...need.clusters].sort((a, b) => b.vcpus - a.vcpus)[0];
  return (
    `the run holds up to ${need.peakVcpus} vCPUs of On-Demand Standard instances at once in ${region}, above this ` +
    `account's quota of ${quota} ` +
    `(Service Quotas ${STANDARD_VCPU_QUOTA.serviceCode} ${STANDARD_VCPU_QUOTA.quotaCode}, ` +
    `"${STANDARD_VCPU_QUOTA.name}")` +
    (largest ? `; its largest cluster, ${largest.cluster}, alone needs ${largest.vcpus}` : '') +
    `: request an increase (aws service-quotas request-service-quota-increase --service-code ec2 --quota-code ` +
    `${STANDARD_VCPU_QUOTA.quotaCode} --desired-value ${need.peakVcpus} --region ${region}), or run fewer or smaller ` +
    'clusters; --skip-quota-check starts it anyway'
  );
}
