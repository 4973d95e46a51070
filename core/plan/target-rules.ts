import { CLOUD_FAULT_ACTIONS, PARTITION_DETECTION_SECONDS } from '../failover/cloud-fault';
import { CLOUD_BROKER_FAULT_ACTIONS } from '../failover/cloud-broker-fault';

const BROKER_NAMES = { rabbitmq: 'RabbitMQ', kafka: 'Kafka', nats: 'NATS' } as const;
import { cloudRabbitmqVersion, topologyVersionProblem } from '../cloud/cloud-releases';
import type { CloudProvider, PriceCatalog } from '../cost/cost-catalog';
import { AZURE_VM_SIZES, deployableAzureVmSize } from '../cost/azure-vm-sizes';
import { azureVmSize, catalogInstanceType, isArmInstanceType } from '../cost/instance-type-names';
import { PlanIssue, PlanValidationError } from './errors';
import { budgetProblem, estimateRun } from '../cost/estimate';
import type { Plan } from './plan';
import { onTarget, pathOnTarget, planOnTarget, regionOn, runsOnTarget } from './plan-target';
import { honoursLazyQueueMode } from '../broker/rabbitmq-version';
import {
  EXECUTION_TIMEOUT_SECONDS,
  HISTORY_EVENTS_BUDGET,
  STEP_FUNCTIONS_HISTORY_LIMIT,
} from '../cloud/workflow-shape';

/**
 * Broker counts the AWS target launches Kafka clusters of: the controller ships one template per count
 * (cdk/BenchmarkController.ts KAFKA_CONTROLLER_BROKER_COUNTS, which a test keeps equal to this list).
 */
export const AWS_KAFKA_BROKER_COUNTS: readonly number[] = [1, 3, 5];
/**
 * The NATS server counts the AWS controller ships templates for (cdk/cluster-templates.ts NATS_CONTROLLER_NODE_COUNTS,
 * which a test keeps equal to this list).
 */
export const AWS_NATS_NODE_COUNTS: readonly number[] = [1, 3, 5];

/**
 * Broker counts the Azure target launches Kafka clusters of: bicep/main.bicep instanceCount's @minValue / @maxValue (a
 * test keeps them equal).
 */
export const AZURE_KAFKA_BROKER_COUNT = { min: 1, max: 7 } as const;

// The naming rules live in a module without dependencies, so that handlers that only name an Azure size do not bundle
// zod.
export { azureVmSize, catalogInstanceType, isArmInstanceType };

/**
 * What a cloud target needs from a plan beyond the plan schema: every cluster names its instance type, the
 * price catalog knows that type (so the run can be priced: the point of a cloud run), and on AWS the type is
 * x86-64 and on Azure one the templates deploy (core/cost/azure-vm-sizes.ts); its RabbitMQ version is one the target
 * installs (core/cloud/cloud-releases.ts), and mirrored queues run on 3.x. The same rules serve `rmqbench validate
 * --target` and the workflow's ValidatePlan state, so a plan
 * is refused before anything is created. Pure: the catalog is passed in.
 */

/** The types the catalog prices for a provider, sorted; on Azure only the sizes the templates deploy. */
function knownInstanceTypes(catalog: PriceCatalog, provider: CloudProvider): string[] {
  const priced = new Set(
    catalog.instances.filter((price) => price.provider === provider).map((price) => price.instanceType),
  );
  if (provider === 'azure') return AZURE_VM_SIZES.filter((size) => priced.has(catalogInstanceType('azure', size)));
  return [...priced].sort();
}

/** Whether the catalog holds a price for the type, in either Azure spelling. */
function isPriced(catalog: PriceCatalog, provider: CloudProvider, instanceType: string): boolean {
  const name = catalogInstanceType(provider, instanceType).toLowerCase();
  return catalog.instances.some((price) => price.provider === provider && price.instanceType.toLowerCase() === name);
}

/** The Fs-series (v1) sizes the seed thesis measured; the templates deploy their Fsv2 successors. */
const THESIS_AZURE_SIZES = /^(standard_)?f(4|8|16)s$/i;

/** Why the Azure target refuses a size it does not deploy, naming the sizes it does. */
function undeployableAzureSize(instanceType: string): string {
  const thesis = THESIS_AZURE_SIZES.exec(instanceType);
  return (
    `is not a size the Azure target deploys (bicep/main.bicep clusterVmSize @allowed): ` +
    `use one of ${AZURE_VM_SIZES.join(', ')}` +
    (thesis
      ? `; the thesis's ${instanceType} is an Fs-series (v1) size, ` +
        `whose current successor is Standard_F${thesis[2]}s_v2`
      : '')
  );
}

/** Why the local target refuses `partition`, in the words its error and the README use. */
export const LOCAL_PARTITION_REFUSAL =
  'fault action "partition" is not available on the local target: its nodes share the loopback interface, ' +
  'so cutting one node off needs root firewall rules (nftables) on a machine other runs and engineers share, ' +
  'and the rules would outlive a crashed run; use kill, stop or restart locally ' +
  "(aws and azure run partition on a RabbitMQ cluster, with the node's own firewall)";

/**
 * What the local target cannot do, whatever its machine has (the local target checks the installed RabbitMQ itself when
 * a run starts).
 */
function localProblems(plan: Plan): PlanIssue[] {
  return plan.workloads.flatMap((workload, index) =>
    workload.fault?.action === 'partition'
      ? [{ path: `workloads[${index}].fault.action`, message: LOCAL_PARTITION_REFUSAL, value: workload.fault.action }]
      : [],
  );
}

/*
 * Several load generators per cluster (issue 27) need no rule of their own here: the plan validates them (up to
 * MAX_LOAD_GENERATORS, and a workload that splits over them) and every target runs N: the local target N PerfTest
 * processes, AWS N instances (the cluster template's LoadGeneratorCount), Azure N VMs (main.bicep's
 * loadGeneratorCount), each with its share, merged by core/loadgen.
 */

/**
 * Every problem that keeps `plan` from running on `target`; the local target ignores instance types, regions and
 * prices. Per-target settings are checked for this target (core/plan/plan-target.ts).
 */
export function targetProblems(plan: Plan, target: string, catalog: PriceCatalog): PlanIssue[] {
  if (!plan.clusters.some((cluster) => runsOnTarget(cluster, target))) {
    const message = `no cluster runs on ${target} (each one's targets leave it out)`;
    return [{ path: 'clusters', message, value: target }];
  }
  if (target === 'local') return localProblems(plan);
  if (target !== 'aws' && target !== 'azure') return [];
  const provider: CloudProvider = target;
  const known = knownInstanceTypes(catalog, provider);
  const issues: PlanIssue[] = [
    ...cloudFaultProblems(plan, provider, target),
    ...(provider === 'azure' ? azureFaultWindowProblems(plan) : []),
    ...regionProblems(plan, provider),
  ];
  plan.clusters.forEach((cluster, index) => {
    if (!runsOnTarget(cluster, target)) return;
    issues.push(
      ...clusterBrokerProblems(cluster, index, provider),
      ...instanceTypeProblems(cluster, index, provider, target, catalog, known),
    );
  });
  const resolved = planOnTarget(plan, target);
  issues.push(...lazyQueueProblems(resolved, provider, target));
  issues.push(...workflowLimitProblems(resolved, provider, catalog));
  // The budget is checked once every cluster can be priced: an estimate that leaves parts out would pass too easily.
  if (issues.length === 0 && plan.maxCostUsd !== undefined) {
    const problem = budgetProblem(estimateRun(resolved, { target: provider, catalog }), plan.maxCostUsd, 'maxCostUsd');
    if (problem)
      issues.push({ path: 'maxCostUsd', message: `${problem}; see rmqbench estimate`, value: plan.maxCostUsd });
  }
  return issues;
}

/** Region codes by their form on each cloud: `eu-west-1`, and Azure's programmatic names without dashes. */
const REGION_FORMS: Record<CloudProvider, { pattern: RegExp; example: string }> = {
  aws: { pattern: /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/, example: 'eu-west-1' },
  azure: { pattern: /^[a-z][a-z0-9]+$/, example: 'northeurope' },
};

/** The plan's region on this cloud, when it gives one, has that cloud's form. */
function regionProblems(plan: Plan, provider: CloudProvider): PlanIssue[] {
  const region = regionOn(plan, provider);
  if (region === undefined || REGION_FORMS[provider].pattern.test(region)) return [];
  const path = pathOnTarget('region', plan.region, provider);
  const kind = provider === 'aws' ? 'an AWS region code' : 'an Azure location name';
  const message =
    `"${region}" is not ${kind} (e.g. "${REGION_FORMS[provider].example}"); ` +
    'give one per target: region: { aws: eu-west-1, azure: northeurope }';
  return [{ path, message, value: region }];
}

/**
 * Seconds an Azure fault step needs between `atSeconds` and the end of the repetition: each of its managed Run Commands
 * takes "about 20 seconds" at least ("The minimum time to run a script is about 20 seconds",
 * https://learn.microsoft.com/azure/virtual-machines/linux/run-command, "Restrictions"), and a `leader` or `follower`
 * fault is two (the leader lookup, then the action on the node it names), a fault on a node index one; a few seconds
 * more let the verifier see the fault. Less, and the fault always lands after the verifier's window, recorded as
 * applied but not counted (core/failover/cloud-verifier.ts).
 */
export const AZURE_FAULT_WINDOW_SECONDS = { lookedUp: 45, byIndex: 25 } as const;

/** On azure, each fault leaves its step the seconds its Run Commands take before the repetition ends. */
function azureFaultWindowProblems(plan: Plan): PlanIssue[] {
  return plan.workloads.flatMap((workload, index) => {
    const fault = workload.fault;
    if (!fault) return [];
    const lookedUp = typeof fault.node !== 'number';
    const needed = lookedUp ? AZURE_FAULT_WINDOW_SECONDS.lookedUp : AZURE_FAULT_WINDOW_SECONDS.byIndex;
    if (workload.durationSeconds - fault.atSeconds >= needed) return [];
    const commands = lookedUp ? 'leader lookup and action are two Run Commands' : 'action is a Run Command';
    return [
      {
        path: `workloads[${index}].durationSeconds`,
        message:
          `on azure the fault step's ${commands} ` +
          "of about 20 s or more each (Microsoft's minimum for a Run Command), so a fault at atSeconds " +
          `${fault.atSeconds} would land after the repetition ends and count nothing: leave at least ${needed} s ` +
          `after atSeconds (durationSeconds >= ${fault.atSeconds + needed})`,
        value: workload.durationSeconds,
      },
    ];
  });
}

/**
 * The fault of each workload: applied on this cloud, and healed (a partition long enough for the cluster to notice).
 */
function cloudFaultProblems(plan: Plan, provider: CloudProvider, target: string): PlanIssue[] {
  const issues: PlanIssue[] = [];
  plan.workloads.forEach((workload, index) => {
    const fault = workload.fault;
    if (!fault) return;
    // What each cloud target's fault step applies (core/failover/cloud-fault.ts), on the brokers the workload runs on
    // (core/failover/cloud-broker-fault.ts: Kafka and NATS take no partition); anything else is refused by field.
    const brokers = [
      ...new Set(
        plan.scenarios
          .filter((scenario) => scenario.workload.name === workload.name)
          .map((scenario) => scenario.cluster.broker ?? 'rabbitmq'),
      ),
    ];
    const refusedBy = brokers.find((broker) => !CLOUD_BROKER_FAULT_ACTIONS[broker].includes(fault.action));
    if (!CLOUD_FAULT_ACTIONS[provider].includes(fault.action) || refusedBy !== undefined) {
      const applied = CLOUD_FAULT_ACTIONS[provider].filter((action) =>
        brokers.every((broker) => CLOUD_BROKER_FAULT_ACTIONS[broker].includes(action)),
      );
      issues.push({
        path: `workloads[${index}].fault.action`,
        message:
          `fault action "${fault.action}" is not applied on ${target}` +
          `${refusedBy === undefined ? '' : ` to a ${BROKER_NAMES[refusedBy]} cluster`} ` +
          `(it applies ${applied.join(', ')})`,
        value: fault.action,
      });
      return;
    }
    // A node left down (or cut off) would make the next repetition (or scenario) run on a smaller cluster: the local
    // target starts it again after each repetition, the cloud ones only through the heal step.
    if (fault.action !== 'restart' && fault.healAtSeconds === undefined) {
      const heals = fault.action === 'partition' ? 'removes the partition' : 'starts the node again';
      issues.push({
        path: `workloads[${index}].fault.healAtSeconds`,
        message:
          `on ${target} a ${fault.action} fault needs healAtSeconds: the heal step is what ${heals}, ` +
          `and without it the next repetition would run on a cluster missing a node`,
      });
    }
    if (
      fault.action === 'partition' &&
      fault.healAtSeconds !== undefined &&
      fault.healAtSeconds - fault.atSeconds < PARTITION_DETECTION_SECONDS
    ) {
      issues.push({
        path: `workloads[${index}].fault.healAtSeconds`,
        message:
          `a partition healed ${fault.healAtSeconds - fault.atSeconds} s after atSeconds may end before ` +
          `the cluster notices it (RabbitMQ's net_ticktime of 60 s declares a node down after 45 to 75 s); ` +
          `heal at least ${PARTITION_DETECTION_SECONDS} s after atSeconds ` +
          `(healAtSeconds >= ${fault.atSeconds + PARTITION_DETECTION_SECONDS})`,
        value: fault.healAtSeconds,
      });
    }
  });
  return issues;
}

/** A cluster's broker on this cloud: Kafka's broker counts, RabbitMQ's release and the topologies it supports. */
function clusterBrokerProblems(cluster: Plan['clusters'][number], index: number, provider: CloudProvider): PlanIssue[] {
  const issues: PlanIssue[] = [];
  if (cluster.broker === 'nats') {
    // bicep/main.bicep deploys instanceCount servers (modules/nats-cluster.bicep), @minValue(1) @maxValue(7), as for
    // Kafka.
    const fits =
      provider === 'azure'
        ? cluster.nodes >= AZURE_KAFKA_BROKER_COUNT.min && cluster.nodes <= AZURE_KAFKA_BROKER_COUNT.max
        : AWS_NATS_NODE_COUNTS.includes(cluster.nodes);
    if (fits) return [];
    return [
      {
        path: `clusters[${index}].nodes`,
        message:
          provider === 'azure'
            ? `a NATS cluster on azure has ${AZURE_KAFKA_BROKER_COUNT.min} to ${AZURE_KAFKA_BROKER_COUNT.max} ` +
              'servers (bicep/main.bicep instanceCount); odd counts keep a JetStream meta group majority'
            : `a NATS cluster on aws has ${AWS_NATS_NODE_COUNTS.join(', ')} servers (the controller ships one ` +
              'cluster template per count; odd counts keep a JetStream meta group majority); ' +
              'use one of them or --target local',
        value: cluster.nodes,
      },
    ];
  }
  if (cluster.broker === 'kafka') {
    if (provider === 'azure') {
      // bicep/main.bicep deploys instanceCount brokers (modules/kafka-cluster.bicep brokerCount), @minValue(1)
      // @maxValue(7);
      // CheckClusterReady asks the load generator whether all of them registered
      // (lambdas/check-cluster/azure-load-generator.ts).
      if (
        !Number.isInteger(cluster.nodes) ||
        cluster.nodes < AZURE_KAFKA_BROKER_COUNT.min ||
        cluster.nodes > AZURE_KAFKA_BROKER_COUNT.max
      ) {
        issues.push({
          path: `clusters[${index}].nodes`,
          message:
            `a Kafka cluster on azure has ${AZURE_KAFKA_BROKER_COUNT.min} to ${AZURE_KAFKA_BROKER_COUNT.max} ` +
            `brokers (bicep/main.bicep instanceCount); 3 or 5 keep a KRaft majority through one or two failures`,
          value: cluster.nodes,
        });
      }
    } else if (!AWS_KAFKA_BROKER_COUNTS.includes(cluster.nodes)) {
      issues.push({
        path: `clusters[${index}].nodes`,
        message:
          `a Kafka cluster on aws has ${AWS_KAFKA_BROKER_COUNTS.join(', ')} brokers ` +
          `(the controller ships one cluster template per count; odd counts keep a KRaft majority); ` +
          `use one of them or --target local`,
        value: cluster.nodes,
      });
    }
  } else {
    const release = cloudRabbitmqVersion(provider, onTarget(cluster.rabbitmqVersion, provider));
    if ('error' in release) {
      issues.push({
        path: pathOnTarget(`clusters[${index}].rabbitmqVersion`, cluster.rabbitmqVersion, provider),
        message: release.error,
        value: onTarget(cluster.rabbitmqVersion, provider),
      });
    } else {
      const problem = topologyVersionProblem(
        cluster.topology,
        release.version,
        onTarget(cluster.rabbitmqVersion, provider) === undefined,
      );
      if (problem)
        issues.push({ path: `clusters[${index}].topology.type`, message: problem, value: cluster.topology.type });
    }
  }
  return issues;
}

/** A cluster's instance type on this cloud: given, deployable, x86-64 on aws, and priced by the catalog. */
function instanceTypeProblems(
  cluster: Plan['clusters'][number],
  index: number,
  provider: CloudProvider,
  target: string,
  catalog: PriceCatalog,
  known: string[],
): PlanIssue[] {
  const path = pathOnTarget(`clusters[${index}].instanceType`, cluster.instanceType, target);
  const example = provider === 'aws' ? 'c5.xlarge' : 'Standard_F4s_v2';
  const instanceType = onTarget(cluster.instanceType, target);
  if (instanceType === undefined) {
    return [
      {
        path,
        message:
          `target ${target} needs the nodes' instance type (e.g. "${example}", or one per target: ` +
          `{ aws: c5.xlarge, azure: Standard_F4s_v2 }), so that the run can be priced; ` +
          `the price catalog knows ${known.join(', ')}`,
      },
    ];
  }
  if (provider === 'azure' && deployableAzureVmSize(instanceType) === undefined) {
    return [{ path, message: undeployableAzureSize(instanceType), value: instanceType }];
  }
  if (provider === 'aws' && isArmInstanceType(instanceType)) {
    return [
      {
        path,
        message:
          cluster.broker === 'kafka'
            ? 'is an Arm (Graviton) type, but the controller pins one x86-64 Amazon Linux 2023 image ' +
              'for every cluster node: use an x86-64 type such as c5.xlarge or m5.xlarge'
            : "is an Arm (Graviton) type, but Team RabbitMQ's RPM repositories provide x86-64 Erlang packages only: " +
              'use an x86-64 type such as c5.xlarge or m5.xlarge',
        value: instanceType,
      },
    ];
  }
  if (!isPriced(catalog, provider, instanceType)) {
    return [
      {
        path,
        message:
          `the price catalog shipped with rmqbench (core/data/prices.json) has no ${provider} price ` +
          `for this type, so the run could not be priced; known: ${known.join(', ')}`,
        value: instanceType,
      },
    ];
  }
  return [];
}

/** The lazy queue mode on the release the cloud target installs (the plan may leave rabbitmqVersion to the default). */
function lazyQueueProblems(plan: Plan, provider: CloudProvider, target: string): PlanIssue[] {
  const issues: PlanIssue[] = [];
  for (const scenario of plan.scenarios) {
    if (scenario.workload.queueMode !== 'lazy' || scenario.cluster.broker !== 'rabbitmq') continue;
    const release = cloudRabbitmqVersion(provider, onTarget(scenario.cluster.rabbitmqVersion, provider));
    if ('error' in release || honoursLazyQueueMode(release.version)) continue;
    const index = plan.workloads.findIndex((workload) => workload.name === scenario.workload.name);
    issues.push({
      path: `workloads[${index}].queueMode`,
      message:
        `scenario ${scenario.id} would run on RabbitMQ ${release.version} (${target}), ` +
        `which ignores the lazy queue mode (3.12 and later); ${target} installs no release that honours it`,
      value: 'lazy',
    });
  }
  return issues;
}

/**
 * What one execution of the workflow cannot hold: more history events than HISTORY_EVENTS_BUDGET (Step Functions fails
 * an
 * execution at 25,000), or a cluster whose planned life outlasts the execution's timeout (the execution would stop
 * mid-run, its clusters left to the sweeper).
 */
function workflowLimitProblems(plan: Plan, provider: CloudProvider, catalog: PriceCatalog): PlanIssue[] {
  const estimate = estimateRun(plan, { target: provider, catalog });
  const issues: PlanIssue[] = [];
  if (estimate.historyEvents > HISTORY_EVENTS_BUDGET) {
    issues.push({
      path: plan.repetitions > 1 ? 'repetitions' : 'workloads',
      message:
        `one execution of this plan would record about ${estimate.historyEvents} Step Functions history events, ` +
        `more than the ` +
        `${HISTORY_EVENTS_BUDGET} rmqbench allows of the ${STEP_FUNCTIONS_HISTORY_LIMIT} an execution may hold: ` +
        `split it into ` +
        'several plans (fewer clusters or workloads each) or lower repetitions; ' +
        'see rmqbench estimate --json historyEvents',
      value: plan.repetitions > 1 ? plan.repetitions : plan.workloads.length,
    });
  }
  estimate.clusters.forEach((cluster) => {
    if (cluster.minutes * 60 <= EXECUTION_TIMEOUT_SECONDS) return;
    const index = plan.clusters.findIndex((candidate) => candidate.name === cluster.cluster);
    issues.push({
      path: `clusters[${Math.max(0, index)}]`,
      message:
        `cluster ${cluster.cluster} would run about ${(cluster.minutes / 60).toFixed(1)} h ` +
        `(launch, its repetitions, teardown), longer than ` +
        `an execution's ${EXECUTION_TIMEOUT_SECONDS / 3600} h timeout: ` +
        `give its workloads shorter durations or fewer repetitions, or split the plan`,
      value: cluster.cluster,
    });
  });
  return issues;
}

/** Throws PlanValidationError naming every field a cloud target refuses. */
export function assertPlanRunsOnTarget(plan: Plan, target: string, catalog: PriceCatalog, source: string): void {
  const issues = targetProblems(plan, target, catalog);
  if (issues.length > 0) throw new PlanValidationError(`${source} (target ${target})`, issues);
}
