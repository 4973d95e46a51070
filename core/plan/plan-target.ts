import type { ClusterSpec } from './plan-schema';
import type { Plan } from './plan';

/**
 * Settings a plan gives per cloud target (`instanceType: { aws: r5.xlarge, azure: Standard_E4s_v5 }`, `region: { aws:
 * eu-west-1, azure: northeurope }`, `rabbitmqVersion: { aws: "3.13", azure: "3.13" }`), resolved for the target a
 * run is on, so that one plan runs on every target as it is. The workflow resolves the plan once, when it lays the
 * run out (state-machines/schedule.ts buildSchedule): every later step, the stored run and its reports see plain
 * values, the ones that ran.
 */
export type PerTarget<T> = { readonly aws?: T; readonly azure?: T };

const isPerTarget = <T>(setting: T | PerTarget<T>): setting is PerTarget<T> =>
  typeof setting === 'object' && setting !== null;

/**
 * A setting's value on `target`: a plain value applies to every cloud target, a map gives each its own; the local
 * target has none of either (it ignores instance types and regions).
 */
export function onTarget<T>(setting: T | PerTarget<T> | undefined, target: string): T | undefined {
  if (setting === undefined || (target !== 'aws' && target !== 'azure')) return undefined;
  return isPerTarget(setting) ? setting[target] : setting;
}

/**
 * The field path a missing or wrong per-target value is reported at: `clusters[0].instanceType.aws` for a map,
 * `clusters[0].instanceType` for a plain value.
 */
export function pathOnTarget(path: string, setting: unknown, target: string): string {
  return typeof setting === 'object' && setting !== null ? `${path}.${target}` : path;
}

/** A cluster's instance type in a plan resolved for its target (a plain string), or none. */
export function plainInstanceType(cluster: Pick<ClusterSpec, 'instanceType'>): string | undefined {
  return typeof cluster.instanceType === 'string' ? cluster.instanceType : undefined;
}

/** A cluster's RabbitMQ version in a plan resolved for its target (a plain string), or none. */
export function plainRabbitmqVersion(cluster: Pick<ClusterSpec, 'rabbitmqVersion'>): string | undefined {
  return typeof cluster.rabbitmqVersion === 'string' ? cluster.rabbitmqVersion : undefined;
}

/** Every RabbitMQ version a cluster asks for: the plain one, or each target's. */
export function versionsOf(cluster: Pick<ClusterSpec, 'rabbitmqVersion'>): string[] {
  const setting = cluster.rabbitmqVersion;
  if (setting === undefined) return [];
  return typeof setting === 'string'
    ? [setting]
    : [setting.aws, setting.azure].filter((version): version is string => version !== undefined);
}

/** The plan's region on `target` (a plan resolved for its target carries it as a plain string). */
export function regionOn(plan: Pick<Plan, 'region'>, target: string): string | undefined {
  return onTarget(plan.region, target);
}

/**
 * The plan's region on a cloud target when the controller launches its clusters in another one (`actual`), else
 * undefined: ValidatePlan and `run --target aws` both refuse such a plan.
 */
export function regionMismatch(
  plan: Pick<Plan, 'region'>,
  target: string,
  actual: string | undefined,
): string | undefined {
  const planned = regionOn(plan, target);
  return planned !== undefined && actual !== undefined && planned !== actual ? planned : undefined;
}

/** True when the cluster runs on `target` (its `targets`, every target when it names none). */
export function runsOnTarget(cluster: Pick<ClusterSpec, 'targets'>, target: string): boolean {
  return cluster.targets === undefined || (cluster.targets as readonly string[]).includes(target);
}

/**
 * The plan as it runs on `target`: the clusters (and their scenarios) that run there, each cluster's instanceType and
 * the plan's region the target's values (absent when it has none); the local target keeps no instance type or region.
 * Scenario ids do not change.
 */
export function planOnTarget(given: Plan, target: string): Plan {
  const plan = {
    ...given,
    clusters: given.clusters.filter((cluster) => runsOnTarget(cluster, target)),
    scenarios: given.scenarios.filter((scenario) => runsOnTarget(scenario.cluster, target)),
  };
  const resolveCluster = (cluster: ClusterSpec): ClusterSpec => {
    const { instanceType: _type, rabbitmqVersion: _version, ...rest } = cluster;
    const instanceType = target === 'local' ? plainInstanceType(cluster) : onTarget(cluster.instanceType, target);
    // The local target checks a plain version against the installed one, and ignores a per-target one.
    const rabbitmqVersion =
      target === 'local' ? plainRabbitmqVersion(cluster) : onTarget(cluster.rabbitmqVersion, target);
    return {
      ...rest,
      ...(instanceType === undefined ? {} : { instanceType }),
      ...(rabbitmqVersion === undefined ? {} : { rabbitmqVersion }),
    };
  };
  const clusters = new Map(plan.clusters.map((cluster) => [cluster, resolveCluster(cluster)]));
  const { region: _region, ...rest } = plan;
  const region = regionOn(plan, target);
  return {
    ...rest,
    ...(region === undefined ? {} : { region }),
    clusters: [...clusters.values()],
    scenarios: plan.scenarios.map((scenario) => ({
      ...scenario,
      cluster: clusters.get(scenario.cluster) ?? resolveCluster(scenario.cluster),
    })),
  };
}
