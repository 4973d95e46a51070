import { AZURE_METRICS_SETTLE_SECONDS } from '../metrics/azure-monitor-metrics';
import {
  catalogInstanceType,
  findInstancePrice,
  findLoadBalancerPrice,
  findNatGatewayPrice,
  PriceCatalogError,
  type PriceCatalog,
} from './cost-catalog';
import { groupScenariosByCluster, type Plan } from '../plan/plan';
import { planOnTarget, regionOn } from '../plan/plan-target';
import type { Workload } from '../plan/plan-schema';
import { fixedMessageCount } from '../plan/fixed-work';
import { capacityLadder } from '../capacity/capacity-plan';
import { lineRateGb, loadGeneratorLineRate, type LineRate } from './line-rate';
import {
  CLUSTER_POLL_SECONDS,
  historyEvents,
  lambdaInvocations,
  REPETITION_OVERHEAD_SECONDS,
  repetitionPolls,
  stateTransitions,
  STEP_FUNCTIONS_HISTORY_LIMIT,
  TEARDOWN_POLL_SECONDS,
  type ClusterShape,
  type RepetitionShape,
} from '../cloud/workflow-shape';

/**
 * What a plan will cost on a cloud target before anything is created: cluster-minutes per launched cluster
 * (provisioning + PerfTest time + per-repetition overhead + pauses + teardown), priced with the catalog (nodes,
 * load balancer, load generator), plus the controller's Step Functions transitions and Lambda invocations, and
 * cross-zone data transfer where the plan bounds the rate. Pure: the catalog is passed in.
 */

/**
 * Step Functions Standard workflows: $0.025 per 1,000 state transitions
 * (https://aws.amazon.com/step-functions/pricing/, US East).
 */
export const STEP_FUNCTIONS_USD_PER_TRANSITION = 0.025 / 1000;
/**
 * Lambda (x86): $0.20 per million requests and $0.0000166667 per GB-second (https://aws.amazon.com/lambda/pricing/, US
 * East).
 */
export const LAMBDA_USD_PER_REQUEST = 0.2 / 1_000_000;
export const LAMBDA_USD_PER_GB_SECOND = 0.0000166667;
/** The controller's functions have 512 MB (cdk/BenchmarkController.ts); one second per invocation is assumed. */
const LAMBDA_GB_SECONDS_PER_INVOCATION = 0.5;
/**
 * Data transfer between Availability Zones in one region: $0.01/GB in each direction
 * (https://aws.amazon.com/ec2/pricing/on-demand/, "Data Transfer within the same AWS Region").
 */
export const AWS_CROSS_ZONE_USD_PER_GB = 0.01;

/**
 * The load generator the controller launches with each cluster (cdk/LoadGenerator.ts default; bicep/main.bicep
 * loadGeneratorVmSize default).
 */
export const DEFAULT_LOAD_GENERATOR_TYPE: Readonly<Record<'aws' | 'azure', string>> = {
  aws: 'c5n.4xlarge',
  azure: 'F16s_v2',
};

export interface EstimateOptions {
  readonly target: 'aws' | 'azure';
  readonly catalog: PriceCatalog;
  /** Region whose prices to use. @default - the newest price of each type in any region */
  readonly region?: string;
  /**
   * Minutes from launch to a ready cluster (stack or deployment, boot, join, smoke test). @default 15 on aws, 20 on
   * azure
   */
  readonly provisioningMinutes?: number;
  /** Minutes from the last repetition until the cluster is deleted. @default 5 */
  readonly teardownMinutes?: number;
  /**
   * Seconds each repetition takes beyond PerfTest's duration (starting it remotely, uploading, ingesting). @default 45
   */
  readonly repetitionOverheadSeconds?: number;
  /** @default DEFAULT_LOAD_GENERATOR_TYPE of the target */
  readonly loadGeneratorInstanceType?: string;
  /** The workflow's cluster polling interval (state-machines/definition.ts default). @default 30 */
  readonly clusterPollSeconds?: number;
  /**
   * Clusters the controller runs at once (BenchmarkController's maxConcurrency, the workflow's cluster Map). @default
   * DEFAULT_CLUSTER_CONCURRENCY (4)
   */
  readonly clusterConcurrency?: number;
}

/** The controller's default number of clusters run at once (cdk/BenchmarkController.ts maxConcurrency). */
export const DEFAULT_CLUSTER_CONCURRENCY = 4;

/**
 * Wall-clock minutes of clusters run `concurrency` at a time in plan order, as the workflow's Map state starts the next
 * item when one finishes: each cluster goes to the slot that frees first.
 */
export function wallMinutesOf(clusterMinutes: readonly number[], concurrency: number): number {
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new Error(`cluster concurrency must be a whole number of at least 1 (got ${concurrency})`);
  }
  const slots: number[] = new Array<number>(Math.min(concurrency, Math.max(1, clusterMinutes.length))).fill(0);
  for (const minutes of clusterMinutes) {
    const first = slots.indexOf(Math.min(...slots));
    slots[first] = slots[first]! + minutes;
  }
  return Math.max(0, ...slots);
}

export interface CostPart {
  readonly name: string;
  readonly usd: number;
  /** How the figure was computed, or why it is 0. */
  readonly detail: string;
  /** False when the catalog has no price (the total then leaves this part out). */
  readonly priced: boolean;
  /**
   * The part's ceiling, set when some of its traffic is bounded only by the load generators' line rate (workloads with
   * neither a publish rate nor fixed work): `usd` is then the planned traffic's share, `maxUsd` adds that traffic at
   * the line rate.
   */
  readonly maxUsd?: number;
}

export interface ClusterMinutes {
  readonly cluster: string;
  readonly nodes: number;
  readonly instanceType: string;
  readonly minutes: number;
}

export interface RunEstimate {
  readonly target: 'aws' | 'azure';
  readonly totalUsd: number;
  /** False when a part could not be priced: the total is then a lower bound. */
  readonly complete: boolean;
  /**
   * The most the run can cost, set when some traffic is bounded only by the load generators' line rate (a part with
   * `maxUsd`): every such workload's traffic at that rate.
   */
  readonly maxTotalUsd?: number;
  readonly clusters: readonly ClusterMinutes[];
  /**
   * Wall-clock minutes from start to the last teardown, with `clusterConcurrency` clusters at once (each cluster's
   * minutes include its provisioning and teardown).
   */
  readonly wallMinutes: number;
  /** The concurrency wallMinutes assumes. */
  readonly clusterConcurrency: number;
  readonly stateTransitions: number;
  /**
   * History events of the run's execution (core/cloud/workflow-shape.ts): Step Functions fails an execution past
   * 25,000, and
   * the target rules refuse a plan over HISTORY_EVENTS_BUDGET.
   */
  readonly historyEvents: number;
  readonly parts: readonly CostPart[];
  /**
   * Adaptive repetitions: the figures above count every scenario's `max`; these are the run's if every scenario settles
   * after `min`.
   */
  readonly adaptiveRepetitions?: AdaptiveEstimate;
}

/** What an adaptive plan costs at the least: every scenario stopping after `min` repetitions. */
export interface AdaptiveEstimate {
  readonly min: number;
  readonly max: number;
  readonly ciPercent: number;
  readonly minimumUsd: number;
  readonly minimumWallMinutes: number;
}

export { stateTransitions } from '../cloud/workflow-shape';

const usd = (value: number) => `$${value.toFixed(2)}`;

/**
 * The run's estimate at each scenario's most repetitions; with adaptive repetitions also its least (every scenario
 * settled after `min`).
 */
export function estimateRun(given: Plan, options: EstimateOptions): RunEstimate {
  const rule = given.adaptiveRepetitions;
  if (!rule) return estimateRepetitions(given, options);
  const { adaptiveRepetitions: _rule, ...plain } = given;
  const most = estimateRepetitions(given, options);
  const least = estimateRepetitions({ ...plain, repetitions: rule.min }, options);
  return {
    ...most,
    adaptiveRepetitions: {
      ...rule,
      minimumUsd: least.totalUsd,
      minimumWallMinutes: least.wallMinutes,
    },
  };
}

function estimateRepetitions(given: Plan, options: EstimateOptions): RunEstimate {
  const { target, catalog } = options;
  // The plan's per-target instance types and region, for this target (core/plan/plan-target.ts).
  const plan = planOnTarget(given, target);
  const provisioningMinutes = options.provisioningMinutes ?? (target === 'aws' ? 15 : 20);
  const teardownMinutes = options.teardownMinutes ?? 5;
  const overheadSeconds = options.repetitionOverheadSeconds ?? REPETITION_OVERHEAD_SECONDS;
  const clusterPollSeconds = options.clusterPollSeconds ?? CLUSTER_POLL_SECONDS;
  const loadGeneratorType = options.loadGeneratorInstanceType ?? DEFAULT_LOAD_GENERATOR_TYPE[target];
  const region = options.region ?? regionOn(plan, target);
  const parts: CostPart[] = [];
  const clusters: ClusterMinutes[] = [];
  const workflow: ClusterShape[] = [];
  // On azure the workflow waits for Azure Monitor's late minutes before teardown (state-machines/phases.ts): the VMs
  // run that much longer.
  const metricsWaitMinutes = target === 'azure' ? AZURE_METRICS_SETTLE_SECONDS / 60 : 0;
  const crossZone: TrafficGb = { gb: 0, unbounded: 0, ceilingGb: 0 };
  const lineRate = loadGeneratorLineRate(target, loadGeneratorType);

  const hourly = hourlyPrices(catalog, target, region);
  // Adaptive repetitions: those past min are checked first (CheckSettled).
  const adaptiveMin = plan.adaptiveRepetitions?.min ?? Number.POSITIVE_INFINITY;

  for (const group of groupScenariosByCluster(plan)) {
    // Plan clusters that differ only in connection mode share one launched cluster: it is named after the first.
    const name = group.scenarios[0]?.cluster.name ?? `${group.nodes} nodes`;
    const { seconds, repetitions, lbTraffic } = clusterScenarios(group, plan, {
      overheadSeconds,
      adaptiveMin,
      lineRate,
      crossZone,
    });
    const minutes = provisioningMinutes + seconds / 60 + metricsWaitMinutes + teardownMinutes;
    const instanceType = group.instanceType ?? '(none)';
    clusters.push({ cluster: name, nodes: group.nodes, instanceType, minutes });
    workflow.push({
      clusterPolls: Math.max(1, Math.ceil((provisioningMinutes * 60) / clusterPollSeconds)),
      rereadsMetrics: target === 'azure',
      teardownPolls: Math.max(1, Math.ceil((teardownMinutes * 60) / TEARDOWN_POLL_SECONDS)),
      repetitions,
    });
    parts.push(
      ...clusterCostParts({
        name,
        group,
        minutes,
        hourly,
        catalog,
        target,
        region,
        loadGeneratorType,
        lbTraffic: { ...lbTraffic, lineRate },
      }),
    );
  }

  const { transitions, events, workflowParts } = workflowCostParts(workflow, target, { ...crossZone, lineRate });
  parts.push(...workflowParts);
  const totalUsd = parts.reduce((sum, part) => sum + part.usd, 0);
  const bounded = parts.some((part) => part.maxUsd !== undefined);
  const clusterConcurrency = options.clusterConcurrency ?? DEFAULT_CLUSTER_CONCURRENCY;
  return {
    target,
    totalUsd,
    complete: parts.every((part) => part.priced),
    ...(bounded ? { maxTotalUsd: parts.reduce((sum, part) => sum + (part.maxUsd ?? part.usd), 0) } : {}),
    clusters,
    wallMinutes: wallMinutesOf(
      clusters.map((cluster) => cluster.minutes),
      clusterConcurrency,
    ),
    clusterConcurrency,
    stateTransitions: transitions,
    historyEvents: events,
    parts,
  };
}

type ClusterGroup = ReturnType<typeof groupScenariosByCluster>[number];

/**
 * One launched cluster's scenarios: their seconds, the repetitions' shapes for the workflow, the traffic through its
 * load balancer; adds their traffic between zones to `context.crossZone`.
 */
function clusterScenarios(
  group: ClusterGroup,
  plan: Plan,
  context: { overheadSeconds: number; adaptiveMin: number; lineRate: LineRate | undefined; crossZone: TrafficGb },
): { seconds: number; repetitions: RepetitionShape[]; lbTraffic: TrafficGb } {
  const repetitions: RepetitionShape[] = [];
  let seconds = 0;
  const lbTraffic: TrafficGb = { gb: 0, unbounded: 0, ceilingGb: 0 };
  for (const scenario of group.scenarios) {
    const { workload } = scenario;
    const published = publishedGbOf(workload, plan.repetitions);
    // Without a rate or fixed work, what the load generators can send at their line rate bounds it.
    const ceiling =
      published === undefined && context.lineRate
        ? lineRateGb(context.lineRate, group.loadGenerators ?? 1, workload.durationSeconds) * plan.repetitions
        : 0;
    if (scenario.cluster.connection === 'lb' && scenario.cluster.broker === 'rabbitmq') {
      // In to the brokers and out to the consumers: both directions are processed bytes.
      addTraffic(lbTraffic, published, ceiling, 2);
    }
    for (let repetition = 1; repetition <= plan.repetitions; repetition++) {
      const pause = repetition < plan.repetitions ? plan.pauseSecondsBetweenRepetitions : 0;
      seconds += workload.durationSeconds + context.overheadSeconds + pause;
      // The workflow spreads its checks of a repetition over its duration (state-machines/schedule.ts pollSeconds).
      repetitions.push(repetitionShape(workload.durationSeconds, pause > 0, repetition > context.adaptiveMin));
    }
    addTraffic(context.crossZone, published, ceiling, crossZoneShare(replicaCount(group)));
  }
  return { seconds, repetitions, lbTraffic };
}

/** The states a repetition passes: its checks spread over its duration, its pause, a settled check past min. */
const repetitionShape = (durationSeconds: number, pause: boolean, settledCheck: boolean): RepetitionShape => ({
  polls: repetitionPolls(durationSeconds),
  pause,
  ...(settledCheck ? { settledCheck } : {}),
});

type Hourly = (instanceType: string) => { usd: number; source: string; region: string } | { error: string };

/** An instance type's hourly price on `target` (in `region` when given), or why the catalog has none. */
function hourlyPrices(catalog: PriceCatalog, target: 'aws' | 'azure', region: string | undefined): Hourly {
  return (instanceType) => {
    try {
      const price = findInstancePrice(catalog, {
        provider: target,
        instanceType: catalogInstanceType(target, instanceType),
        ...(region ? { region } : {}),
      });
      return { usd: price.hourlyUsd, source: `${price.region}, ${price.asOf}`, region: price.region };
    } catch (error) {
      if (error instanceof PriceCatalogError) return { error: error.message };
      throw error;
    }
  };
}

/**
 * Traffic of a part's scenarios: the GB their plan bounds (a rate or fixed work), how many scenarios are bounded by
 * nothing in the plan, and the GB those can move at most at the load generators' line rate (0 when it is unknown).
 */
interface TrafficGb {
  gb: number;
  unbounded: number;
  ceilingGb: number;
}

/** Adds a scenario's published GB (or, unbounded, its line-rate ceiling), times the bytes moved per byte published. */
function addTraffic(traffic: TrafficGb, published: number | undefined, ceiling: number, share: number): void {
  if (published === undefined) {
    traffic.unbounded++;
    traffic.ceilingGb += ceiling * share;
  } else traffic.gb += published * share;
}

/**
 * Bytes moved between zones per byte published: published bytes cross zones on the way in and, to the consumers, on
 * the way out (2 of 3 zones are another zone); a replicated queue copies each message to its followers, 2 of 3 of them
 * in another zone too.
 */
function crossZoneShare(replicas: number): number {
  return (2 / 3) * (2 + Math.max(0, replicas - 1));
}

/**
 * GB a workload publishes over its repetitions: its fixed work (messageCount, or totalBytes), and at most what its
 * publishRateLimit, or its capacity ladder's rates, let its producers send in its duration; undefined when nothing
 * bounds it (its traffic is whatever rate the cluster takes).
 */
function publishedGbOf(workload: Workload, repetitions: number): number | undefined {
  const byRate = workload.capacity
    ? // Each step's rate over its seconds: what the ladder schedules, so at most what the producers publish.
      capacityLadder(workload.capacity, workload.producers).reduce(
        (sum, step) => sum + step.targetRate * (step.toSeconds - step.fromSeconds),
        0,
      )
    : workload.publishRateLimit === undefined
      ? undefined
      : workload.producers * workload.publishRateLimit * workload.durationSeconds;
  const fixed = fixedMessageCount(workload);
  const messages = fixed === undefined ? byRate : byRate === undefined ? fixed : Math.min(fixed, byRate);
  return messages === undefined ? undefined : (messages * workload.messageSizeBytes * repetitions) / 1e9;
}

/** Copies of each message the cluster keeps: the queue type's replicas (a classic queue has one). */
function replicaCount(group: ClusterGroup): number {
  const { topology } = group;
  if (topology.type === 'quorum' || topology.type === 'stream') return topology.replicationFactor ?? group.nodes;
  if (topology.type === 'mirrored') return topology.mirrorTo === 'all' ? group.nodes : topology.mirrorTo;
  return 1;
}

/** A launched cluster's parts: its nodes, its load balancer (RabbitMQ only) and its load generator for `minutes`. */
function clusterCostParts(input: {
  name: string;
  group: ClusterGroup;
  minutes: number;
  hourly: Hourly;
  catalog: PriceCatalog;
  target: EstimateOptions['target'];
  region: string | undefined;
  loadGeneratorType: string;
  /** GB the load balancer processes in the cluster's `lb` scenarios, those bounded by nothing, their ceiling. */
  lbTraffic: BoundedTraffic;
}): CostPart[] {
  const { name, group, minutes, hourly, catalog, target, region, loadGeneratorType } = input;
  const instanceType = group.instanceType ?? '(none)';
  const hours = minutes / 60;
  const parts: CostPart[] = [];
  const node =
    group.instanceType === undefined ? { error: 'the plan cluster names no instanceType' } : hourly(group.instanceType);
  parts.push(
    'error' in node
      ? { name: `${name}: nodes`, usd: 0, priced: false, detail: node.error }
      : {
          name: `${name}: nodes`,
          usd: group.nodes * node.usd * hours,
          priced: true,
          detail: `${group.nodes} × ${instanceType} × ${minutes.toFixed(1)} min at ${usd(node.usd)}/h (${node.source})`,
        },
  );
  // Every RabbitMQ cluster has a load balancer (the NLB / Azure Standard load balancer), whatever the plan's connection
  // mode; a Kafka or NATS cluster has none (cdk/KafkaCluster.ts, cdk/NatsCluster.ts, bicep/modules/kafka-cluster.bicep:
  // clients reach each broker or server at its own private address). Its region, and the NAT gateway's, is the plan's,
  // else the one the nodes were priced in.
  const networkRegion = region ?? ('error' in node ? undefined : node.region);
  if (group.broker === 'rabbitmq') {
    parts.push(loadBalancerPart({ name, minutes, catalog, target, region: networkRegion, lbTraffic: input.lbTraffic }));
  }
  const generators = group.loadGenerators ?? 1;
  parts.push(
    natGatewayPart({
      name,
      vms: group.nodes + generators,
      broker: group.broker,
      minutes,
      catalog,
      target,
      region: networkRegion,
    }),
  );
  const generator = hourly(loadGeneratorType);
  parts.push(
    'error' in generator
      ? {
          name: `${name}: load generator`,
          usd: 0,
          priced: false,
          detail: `${loadGeneratorType} is not priced: ${generator.error}`,
        }
      : {
          name: `${name}: load generator`,
          usd: generators * generator.usd * hours,
          priced: true,
          detail:
            `${generators} × ${loadGeneratorType} × ${minutes.toFixed(1)} min at ${usd(generator.usd)}/h ` +
            `(${generator.source})`,
        },
  );
  return parts;
}

/** Load balancers of one controller-launched RabbitMQ cluster, per target. */
const LOAD_BALANCERS_PER_CLUSTER: Readonly<Record<'aws' | 'azure', number>> = { aws: 1, azure: 2 };

/** Traffic with the line rate its ceiling was computed at (undefined: unknown, unbounded traffic stays unpriced). */
type BoundedTraffic = TrafficGb & { lineRate: LineRate | undefined };

/**
 * The per-GB charge on `traffic`: priced when the plan bounds every scenario's rate, or when the load generators' line
 * rate bounds the others (then with a ceiling, `maxUsd`); unpriced otherwise (the traffic depends on the measured
 * rate).
 */
function perGbCharge(
  traffic: BoundedTraffic,
  perGb: number,
  fixedUsd: number,
): Pick<CostPart, 'usd' | 'priced' | 'maxUsd'> & { note: string } {
  const plannedUsd = fixedUsd + traffic.gb * perGb;
  if (traffic.unbounded === 0) return { usd: plannedUsd, priced: true, note: '' };
  const scenarios =
    `${traffic.unbounded} scenario(s) have neither a publishRateLimit nor fixed work (messageCount, totalBytes), so ` +
    'their traffic depends on the measured rate';
  if (!traffic.lineRate) return { usd: plannedUsd, priced: false, note: `; ${scenarios} ($${perGb} per GB)` };
  const maxUsd = plannedUsd + traffic.ceilingGb * perGb;
  return {
    usd: plannedUsd,
    priced: true,
    maxUsd,
    note:
      `; ${scenarios}: up to ${traffic.ceilingGb.toFixed(0)} GB more at the load generators' line rate, so at most ` +
      `${usd(maxUsd)} (${traffic.lineRate.source}); a publishRateLimit bounds it`,
  };
}

/**
 * The cluster's load balancer for `minutes`: its hourly charge, plus the catalog's per-GB charge on the traffic of the
 * scenarios that connect through it (`lb`): what the plan bounds (a rate or fixed work), and for a scenario bounded by
 * nothing, a ceiling at the load generators' line rate (perGbCharge).
 */
function loadBalancerPart(input: {
  name: string;
  minutes: number;
  catalog: PriceCatalog;
  target: EstimateOptions['target'];
  region: string | undefined;
  lbTraffic: BoundedTraffic;
}): CostPart {
  const { name, minutes, catalog, target, region, lbTraffic } = input;
  const loadBalancer = findLoadBalancerPrice(catalog, target, region ?? '*');
  const partName = `${name}: load balancer`;
  if (loadBalancer === undefined)
    return {
      name: partName,
      usd: 0,
      priced: false,
      detail: `no ${target} load balancer price in the catalog${region ? ` for ${region}` : ''}`,
    };
  // On Azure the controller's clusters have two: the internal one and a public one that admits only the controller's
  // NAT addresses (lambdas/shared/azure-cluster.ts deploymentParameterValues, publicLoadBalancer); each is billed its
  // first five rules. On AWS one NLB has both.
  const count = LOAD_BALANCERS_PER_CLUSTER[target];
  const fixed = count * loadBalancer.hourlyUsd * (minutes / 60);
  const hourlyText = `${count > 1 ? `${count} × ` : ''}${minutes.toFixed(1)} min at ${usd(loadBalancer.hourlyUsd)}/h`;
  const where = loadBalancer.region === '*' ? '' : `${loadBalancer.region}, `;
  const asOf = `${loadBalancer.kind}, ${where}${loadBalancer.asOf}`;
  const perGb = loadBalancer.perGbProcessedUsd;
  if (perGb === undefined)
    return { name: partName, usd: fixed, priced: true, detail: `${hourlyText}, fixed hourly charge only (${asOf})` };
  const { note, ...charge } = perGbCharge(lbTraffic, perGb, fixed);
  return {
    name: partName,
    ...charge,
    detail:
      `${hourlyText} + ${lbTraffic.gb.toFixed(2)} GB of planned traffic processed at $${perGb}/GB ` +
      `(${asOf})${note}`,
  };
}

/**
 * GB one VM downloads through the NAT gateway while it boots, an upper bound: the package indexes and the Erlang and
 * RabbitMQ packages (AWS: yum1/yum2.rabbitmq.com, cdk/user-data/rabbitmq-node.ts; Azure: Team RabbitMQ's apt
 * repositories, bicep/cloud-init/rmqbench-node-setup.sh), or Java and PerfTest, or Kafka's tarball, each tens of MB.
 * Amazon Linux's repositories and the S3 assets come through the VPC's S3 gateway endpoint instead (no NAT charge).
 */
export const BOOT_DOWNLOAD_GB_PER_VM = 0.25;

/**
 * What a cluster costs at the NAT gateway. The benchmark's own traffic stays inside the VPC or VNet (the load
 * generator reaches the brokers by private address; results go to S3 through the gateway endpoint, on Azure through
 * pre-signed URLs of the controller's bucket), so what crosses it is what the VMs download at boot. AWS: the
 * controller's NAT gateway is standing (its hours are the controller's, not a run's): only those GB. Azure: each
 * run's resource group has its own NAT gateway (bicep/modules/network.bicep) with a public IP, and a RabbitMQ
 * cluster's public load balancer has another: their hours too.
 */
function natGatewayPart(input: {
  name: string;
  vms: number;
  broker: string;
  minutes: number;
  catalog: PriceCatalog;
  target: EstimateOptions['target'];
  region: string | undefined;
}): CostPart {
  const { name, vms, minutes, catalog, target, region } = input;
  const partName = `${name}: NAT gateway`;
  const nat = findNatGatewayPrice(catalog, target, region ?? '*');
  if (nat === undefined)
    return {
      name: partName,
      usd: 0,
      priced: false,
      detail: `no ${target} NAT gateway price in the catalog${region ? ` for ${region}` : ''}`,
    };
  const gb = vms * BOOT_DOWNLOAD_GB_PER_VM;
  const where = nat.region === '*' ? nat.asOf : `${nat.region}, ${nat.asOf}`;
  const downloads = `at most ${gb.toFixed(2)} GB of ${vms} VMs' boot downloads at $${nat.perGbProcessedUsd}/GB`;
  if (target === 'aws')
    return {
      name: partName,
      usd: gb * nat.perGbProcessedUsd,
      priced: true,
      detail: `${downloads} through the controller's NAT gateway, whose hours are the controller's (${where})`,
    };
  const hours = minutes / 60;
  const addresses = input.broker === 'rabbitmq' ? 2 : 1;
  const ipHourly = nat.publicIpv4HourlyUsd ?? 0;
  return {
    name: partName,
    usd: nat.hourlyUsd * hours + gb * nat.perGbProcessedUsd + addresses * ipHourly * hours,
    priced: nat.publicIpv4HourlyUsd !== undefined,
    detail:
      `${minutes.toFixed(1)} min at ${usd(nat.hourlyUsd)}/h + ${downloads} + ${addresses} public IPv4 address(es) ` +
      `at $${ipHourly}/h (${where})`,
  };
}

/** Step Functions' transitions, Lambda's invocations and (AWS) the planned traffic between zones. */
function workflowCostParts(workflow: ClusterShape[], target: EstimateOptions['target'], crossZone: BoundedTraffic) {
  const workflowParts: CostPart[] = [];
  const transitions = stateTransitions(workflow);
  const events = historyEvents(workflow);
  workflowParts.push({
    name: 'Step Functions',
    usd: transitions * STEP_FUNCTIONS_USD_PER_TRANSITION,
    priced: true,
    detail:
      `${transitions} state transitions at $0.025 per 1,000; ` +
      `${events} history events of the ${STEP_FUNCTIONS_HISTORY_LIMIT} one execution may hold`,
  });
  const invocations = lambdaInvocations(workflow);
  workflowParts.push({
    name: 'Lambda',
    usd: invocations * (LAMBDA_USD_PER_REQUEST + LAMBDA_GB_SECONDS_PER_INVOCATION * LAMBDA_USD_PER_GB_SECOND),
    priced: true,
    detail: `${invocations} invocations of 512 MB for about 1 s each`,
  });
  if (target === 'aws') {
    const { note, ...charge } = perGbCharge(crossZone, AWS_CROSS_ZONE_USD_PER_GB, 0);
    workflowParts.push({
      name: 'data transfer between zones',
      ...charge,
      detail: `${crossZone.gb.toFixed(2)} GB of planned traffic at $${AWS_CROSS_ZONE_USD_PER_GB}/GB${note}`,
    });
  } else {
    workflowParts.push({
      name: 'data transfer between zones',
      usd: 0,
      priced: true,
      detail: 'not modelled for Azure (traffic stays inside one virtual network)',
    });
  }
  return { transitions, events, workflowParts };
}

/**
 * Why the plan's estimate exceeds its budget, or undefined when it fits (or no budget is set). The budget is held
 * against the planned total; a ceiling (traffic at the load generators' line rate) is named beside it, not held.
 */
export function budgetProblem(
  estimate: Pick<RunEstimate, 'totalUsd' | 'target' | 'complete' | 'maxTotalUsd'>,
  maxCostUsd: number | undefined,
  source: string,
): string | undefined {
  if (maxCostUsd === undefined || estimate.totalUsd <= maxCostUsd) return undefined;
  return (
    `the estimated cost ${usd(estimate.totalUsd)} on ${estimate.target} exceeds ${source} ${usd(maxCostUsd)}` +
    `${estimate.complete ? '' : ' (and the estimate leaves out parts the catalog cannot price)'}` +
    (estimate.maxTotalUsd === undefined
      ? ''
      : ` (up to ${usd(estimate.maxTotalUsd)} at the load generators' line rate)`)
  );
}
