import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Annotations,
  App,
  ArnFormat,
  CfnParameter,
  Duration,
  Fn,
  RemovalPolicy,
  Stack,
  Tags,
  Token,
  Validations,
} from 'aws-cdk-lib';
import * as autoscaling from 'aws-cdk-lib/aws-autoscaling';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3assets from 'aws-cdk-lib/aws-s3-assets';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { CLUSTER_STACK_SESSION_TAG } from '../core/failover/cloud-fault';
import { BROKER_COMPONENTS } from '../core/failover/cloud-broker-fault';
import { TABLE_KEYS } from '../core/results/result-items';
import { buildBenchmarkDefinition } from '../state-machines/definition';
import { FUNCTION_PLACEHOLDERS, FunctionPlaceholder } from '../state-machines/states';
import { CLUSTER_STACK_IAM_ACTIONS } from './cluster-stack-iam';
import { LoadGenerator } from './LoadGenerator';
import { launchLoadGeneratorsByParameter } from './cluster-template-load-generators';
import { MAX_LOAD_GENERATORS } from '../core/loadgen/load-generator-count';
import { nagResourceText } from './nag-finding';
import { AMQP_PORT, RabbitMqCluster } from './RabbitMqCluster';
import { RabbitMqInstanceTiers } from './instance-tiers';
import { RabbitMqRelease } from './rabbitmq-release';
import { CHECKOV_REASON, skipCheckov } from './checkov';
import {
  buildKafkaClusterStack,
  buildNatsClusterStack,
  CLUSTER_AVAILABILITY_ZONE_COUNT,
  CLUSTER_INSTANCE_TYPE_PATTERN,
  CLUSTER_MIN_AVAILABILITY_ZONES,
  controllerPlacement,
  KAFKA_CONTROLLER_BROKER_COUNTS,
  kafkaClusterTemplateFileName,
  kafkaClusterTemplateStackName,
  kafkaClusterTemplateUrlVariable,
  NATS_CONTROLLER_NODE_COUNTS,
  natsClusterTemplateFileName,
  natsClusterTemplateStackName,
  natsClusterTemplateUrlVariable,
} from './cluster-templates';

export {
  CLUSTER_AVAILABILITY_ZONE_COUNT,
  CLUSTER_INSTANCE_TYPE_PATTERN,
  CLUSTER_MIN_AVAILABILITY_ZONES,
  KAFKA_CONTROLLER_BROKER_COUNTS,
  kafkaClusterTemplateFileName,
  kafkaClusterTemplateUrlVariable,
  NATS_CONTROLLER_NODE_COUNTS,
  natsClusterTemplateFileName,
  natsClusterTemplateUrlVariable,
} from './cluster-templates';

/**
 * The ports an Azure cluster's public load balancer forwards (bicep/modules/cluster.bicep: amqpsPort,
 * managementTlsPort).
 */
export const AZURE_AMQPS_PORT = 5671;
export const AZURE_MANAGEMENT_HTTPS_PORT = 15671;

/**
 * Releases the controller ships cluster templates for (one template per release; node count and policies are its
 * parameters).
 */
export const CONTROLLER_RELEASES: readonly RabbitMqRelease[] = [RabbitMqRelease.V3_13, RabbitMqRelease.V4_1];
/** The release a plan cluster without `rabbitmqVersion` runs (RabbitMqCluster's default). */
export const CONTROLLER_DEFAULT_RELEASE = RabbitMqRelease.V4_1;
/** Node counts one cluster template can launch (its NodeCount parameter). */
export const CLUSTER_NODE_COUNT_RANGE = { min: 1, max: 7 } as const;
/** Largest BrokerPolicies value a cluster template takes (CloudFormation parameter values are limited to 4 KB). */
export const CLUSTER_POLICIES_MAX_LENGTH = 4096;
/** Here-document delimiter of the policies file the nodes' user data writes. */
const POLICIES_DELIMITER = 'RMQBENCH_BROKER_POLICIES';
/** The file name of a release's cluster template in synthesizeClusterTemplates' folder. */
export const clusterTemplateFileName = (release: RabbitMqRelease) =>
  `cluster-rabbitmq-${release.rabbitmqVersion}.template.json`;
/** CLUSTER_TEMPLATE_URL_<version with _ for .> (the launch function reads the version back from the name). */
export const clusterTemplateUrlVariable = (release: RabbitMqRelease) =>
  `CLUSTER_TEMPLATE_URL_${release.rabbitmqVersion.replace(/\./g, '_')}`;
/** Every stack the controller launches is named with this prefix; its IAM grants stop there. */
export const CLUSTER_STACK_PREFIX = 'rmqbench-';
export interface BenchmarkScheduleProps {
  /** An EventBridge Scheduler expression, e.g. `rate(7 days)` or `cron(0 3 ? * MON *)`. */
  readonly expression: string;
  /** The benchmark plan to run (the same model as the CLI's YAML/JSON plans). */
  readonly plan: Record<string, unknown>;
}

export interface BenchmarkAzureProps {
  /**
   * The service principal as JSON `{ tenantId, clientId, clientSecret, subscriptionId, parameters? }`;
   * `parameters` holds the template's secret values (rabbitmqAdminPassword, erlangCookie, adminSshPublicKey, ...).
   * The subscription comes from here, so that one secret rotation changes both together.
   */
  readonly credentialsSecret: secretsmanager.ISecret;
  /** Azure region of the run's resource groups, e.g. `westeurope`. */
  readonly location: string;
  /**
   * Path of the compiled ARM JSON of bicep/main.bicep (`bicep build bicep/main.bicep --outfile main.json`), deployed as
   * an asset.
   */
  readonly templateFile: string;
  /**
   * Non-secret template parameter values every cluster shares (they become a Lambda environment variable). @default {}
   */
  readonly parameters?: Record<string, unknown>;
  /**
   * A second, fault-only service principal as JSON `{ tenantId, clientId, clientSecret, subscriptionId }` (the same
   * subscription as credentialsSecret). Only the fault function may read it, and it builds its ARM clients from it
   * alone;
   * each run's deployment gives this principal Virtual Machine Contributor on that run's resource group only
   * (bicep/main.bicep `faultPrincipalId`), so a fault step reaches no VM of another run. Give faultPrincipalId with it.
   * @default - the fault step runs as the credentialsSecret principal, with whatever scope that one was granted
   */
  readonly faultCredentialsSecret?: secretsmanager.ISecret;
  /**
   * The object id (not the client id) of the faultCredentialsSecret principal, passed to every deployment as the
   * template parameter `faultPrincipalId`. Required with faultCredentialsSecret, refused without it.
   * @default - none (no fault-only role assignment)
   */
  readonly faultPrincipalId?: string;
}

export interface BenchmarkControllerProps {
  /**
   * The VPC the clusters are launched into and the smoke-test function runs in, so that it reaches their
   * internal load balancers. It needs private subnets with egress in at least 2 Availability Zones; the clusters are
   * spread over the first 3 (or 2, when it has only 2: then losing the zone holding most nodes stops a 3-node cluster).
   * It needs DNS support and DNS host names (Kafka brokers are found in a private hosted zone: checked where the VPC is
   * defined in this app); imported, give its subnets' CIDR blocks so that the smoke test's egress covers them.
   * @default - a new VPC over 3 Availability Zones with one NAT gateway and flow logs (in an environment-agnostic stack
   * the
   *   zones are `Fn::GetAZs` 0-2, which fails to deploy in a region with fewer than 3 zones: give the stack an env or a
   * vpc)
   */
  readonly vpc?: ec2.IVpc;
  /**
   * Public IPv4 addresses the functions that reach Azure clusters (smoke test, readiness check) leave the `vpc` from:
   * the Elastic IP of the NAT gateway of every cluster subnet (one per zone where each zone has its own), e.g.
   * `['203.0.113.10', '198.51.100.4']`. Azure clusters get a public load balancer whose network security group admits
   * these (as `<ip>/32`) besides `allowedSourceAddressPrefixes`. Required with `azure` when `vpc` is imported (its NAT
   * gateways cannot be seen at synthesis); with a VPC defined in the app, at least one per NAT gateway.
   * @default - the Elastic IPs of the NAT gateways of the controller's VPC, when it is defined in this app
   */
  readonly controllerEgressAddresses?: string[];
  /**
   * The results table (keys PK/SK, index GSI1 on GSI1PK/GSI1SK with KEYS_ONLY projection).
   * @default - a new table with point-in-time recovery
   */
  readonly resultsTable?: dynamodb.ITable;
  /** Cluster configurations launched at the same time. @default 4 */
  readonly maxConcurrency?: number;
  /** Hours after which the sweeper deletes a launched cluster whatever its run's state. @default 12 */
  readonly expiryHours?: number;
  /** Minutes a cluster may take to become ready. @default 30 */
  readonly launchTimeoutMinutes?: number;
  /** Days raw PerfTest output is kept in the bucket. @default 90 */
  readonly rawOutputRetentionDays?: number;
  /** Runs a plan on a schedule (EventBridge Scheduler). @default - no schedule: start executions yourself */
  readonly schedule?: BenchmarkScheduleProps;
  /**
   * Folder holding the bundled handlers (`<name>/index.mjs` and its chunks, from `npm run build`). @default -
   * dist/lambda-bundles of this package
   */
  readonly lambdaBundleDir?: string;
  /** What happens to the table and bucket when the stack is deleted. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Lets executions with `target: azure` launch clusters on Azure (ARM deployments of bicep/main.bicep). @default - AWS
   * only: `target: azure` fails in LaunchCluster
   */
  readonly azure?: BenchmarkAzureProps;
}

/** The functions that call Azure Resource Manager when Azure is configured. */
const AZURE_FUNCTIONS = [
  'launch-cluster',
  'check-cluster',
  'smoke-test',
  'start-repetition',
  'fault',
  'check-repetition',
  'ingest-repetition',
  'teardown-cluster',
  'failure-handler',
  'sweeper',
];

const FUNCTIONS: Record<FunctionPlaceholder, string> = {
  ValidatePlanFunctionArn: 'validate-plan',
  RunRecordFunctionArn: 'run-record',
  LaunchClusterFunctionArn: 'launch-cluster',
  CheckClusterFunctionArn: 'check-cluster',
  SmokeTestFunctionArn: 'smoke-test',
  StartRepetitionFunctionArn: 'start-repetition',
  FaultFunctionArn: 'fault',
  CheckRepetitionFunctionArn: 'check-repetition',
  IngestRepetitionFunctionArn: 'ingest-repetition',
  TeardownClusterFunctionArn: 'teardown-cluster',
};

/**
 * The serverless benchmark controller: a Step Functions workflow that validates a plan, launches a
 * RabbitMQ cluster and load generator per cluster configuration (CloudFormation), smoke-tests it,
 * runs PerfTest over SSM, ingests results into DynamoDB and always tears down; with a failure rule
 * and an hourly sweeper as safety nets.
 */
/** The controller's settings with their defaults, after checking every prop (each error names the prop). */
function controllerSettings(props: BenchmarkControllerProps) {
  const maxConcurrency = props.maxConcurrency ?? 4;
  const expiryHours = props.expiryHours ?? 12;
  const launchTimeoutMinutes = props.launchTimeoutMinutes ?? 30;
  const retentionDays = props.rawOutputRetentionDays ?? 90;
  const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
  // From the sources (cdk/) or the compiled package (dist/cdk/): the package root holds package.json.
  const packageRoot = existsSync(join(__dirname, '..', 'package.json'))
    ? join(__dirname, '..')
    : join(__dirname, '..', '..');
  const bundleDir = props.lambdaBundleDir ?? join(packageRoot, 'dist', 'lambda-bundles');
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > 40)
    throw new Error(`maxConcurrency must be an integer from 1 to 40 (got ${maxConcurrency})`);
  if (!(expiryHours > 0 && expiryHours <= 168))
    throw new Error(`expiryHours must be more than 0 and at most 168 (got ${expiryHours})`);
  if (props.schedule && !/^(rate|cron|at)\(.+\)$/.test(props.schedule.expression)) {
    throw new Error(`schedule.expression must be rate(...), cron(...) or at(...) (got "${props.schedule.expression}")`);
  }
  if (props.azure && !/^[a-z0-9]+$/.test(props.azure.location))
    throw new Error(`azure.location must be an Azure region name such as westeurope (got "${props.azure.location}")`);
  if (props.azure) validateFaultPrincipal(props.azure);
  if (props.azure && !existsSync(props.azure.templateFile))
    throw new Error(
      `azure.templateFile must be the compiled ARM JSON of bicep/main.bicep (no file at ${props.azure.templateFile})`,
    );
  if (props.azure && props.vpc) checkGivenVpcEgress(props.vpc, props.controllerEgressAddresses);
  if (props.vpc) checkGivenVpcDns(props.vpc);
  for (const address of props.controllerEgressAddresses ?? []) {
    if (!Token.isUnresolved(address) && !/^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/.test(address))
      throw new Error(`controllerEgressAddresses must be IPv4 addresses such as 203.0.113.10 (got "${address}")`);
  }
  return { maxConcurrency, expiryHours, launchTimeoutMinutes, retentionDays, removalPolicy, bundleDir };
}
type ControllerSettings = ReturnType<typeof controllerSettings>;

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What the stack-access grants share (BenchmarkController.grantStackAccess). */
interface StackAccess {
  readonly functions: Record<string, lambda.Function>;
  readonly stack: Stack;
  readonly stackArns: string;
  readonly passRole: iam.PolicyStatement;
  readonly acknowledgeRunStacks: (name: string) => void;
}

/**
 * faultCredentialsSecret and faultPrincipalId go together; the id is the principal's object id (a GUID); parameters may
 * not set it apart.
 */
function validateFaultPrincipal(azure: BenchmarkAzureProps): void {
  if (Boolean(azure.faultCredentialsSecret) !== Boolean(azure.faultPrincipalId)) {
    throw new Error(
      'azure.faultCredentialsSecret and azure.faultPrincipalId go together: give the fault-only service ' +
        "principal's secret and its object id, or neither",
    );
  }
  if (azure.faultPrincipalId !== undefined && !GUID.test(azure.faultPrincipalId))
    throw new Error(
      `azure.faultPrincipalId must be the service principal's object id, a GUID (got "${azure.faultPrincipalId}")`,
    );
  if (azure.parameters && 'faultPrincipalId' in azure.parameters)
    throw new Error(
      'azure.parameters must not hold faultPrincipalId: give it as azure.faultPrincipalId, together with ' +
        'azure.faultCredentialsSecret',
    );
}

export class BenchmarkController extends Construct {
  public readonly stateMachine: sfn.StateMachine;
  public readonly resultsTable: dynamodb.ITable;
  public readonly rawOutputBucket: s3.Bucket;
  public readonly functions: Readonly<Record<string, lambda.Function>>;
  /**
   * The role the fault function assumes per cluster (session tag rmqbench:cluster-stack) to run SSM commands on that
   * cluster's nodes only.
   */
  public readonly faultNodeRole: iam.Role;
  /** The role CloudFormation assumes to create and delete cluster stacks. */
  public readonly cloudFormationRole: iam.Role;
  /** The cluster + load generator template for each shipped release, by its exact RabbitMQ version (e.g. "4.1.4"). */
  public readonly clusterTemplates: Readonly<Record<string, s3assets.Asset>>;
  /**
   * The Kafka cluster + load generator template for each broker count of KAFKA_CONTROLLER_BROKER_COUNTS, by that count.
   */
  public readonly kafkaClusterTemplates: Readonly<Record<number, s3assets.Asset>>;
  /** The NATS cluster + load generator template for each node count of NATS_CONTROLLER_NODE_COUNTS, by that count. */
  public readonly natsClusterTemplates: Readonly<Record<number, s3assets.Asset>>;
  public readonly failureRule: events.Rule;
  public readonly sweeperRule: events.Rule;
  public readonly schedule?: scheduler.CfnSchedule;
  /** The compiled ARM template of the Azure clusters, when `azure` is given. */
  public readonly azureTemplate?: s3assets.Asset;
  /** The VPC of the cluster stacks and the smoke-test function. */
  public readonly vpc: ec2.IVpc;
  /** The private subnets (one per Availability Zone) every cluster stack is placed in. */
  public readonly clusterSubnets: readonly ec2.ISubnet[];
  /** The SSM parameter holding the AMI id every cluster node runs, pinned at each deployment of the controller. */
  public readonly clusterNodeImage: ssm.StringParameter;
  /** Security group of the smoke-test function; each cluster admits AMQP and management from it. */
  public readonly smokeTestSecurityGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string, props: BenchmarkControllerProps = {}) {
    super(scope, id);
    const settings = controllerSettings(props);
    const stack = Stack.of(this);

    this.resultsTable = props.resultsTable ?? this.createTable(settings.removalPolicy);
    this.rawOutputBucket = this.createRawOutputBucket(settings.retentionDays, settings.removalPolicy);
    this.vpc = props.vpc ?? this.createVpc();
    this.clusterSubnets = this.vpc.privateSubnets.length
      ? this.vpc
          .selectSubnets({ subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, onePerAz: true })
          .subnets.slice(0, CLUSTER_AVAILABILITY_ZONE_COUNT)
      : [];
    if (this.clusterSubnets.length < CLUSTER_MIN_AVAILABILITY_ZONES) {
      throw new Error(
        `vpc must have private subnets with egress in at least ${CLUSTER_MIN_AVAILABILITY_ZONES} Availability ` +
          `Zones (3 recommended; got ${this.clusterSubnets.length}): the clusters are spread over them`,
      );
    }
    this.smokeTestSecurityGroup = this.createClusterClientSecurityGroup(props);
    const templates = this.createClusterTemplates(stack);
    this.clusterNodeImage = templates.clusterNodeImage;
    this.clusterTemplates = templates.clusterTemplates;
    this.kafkaClusterTemplates = templates.kafkaClusterTemplates;
    this.natsClusterTemplates = templates.natsClusterTemplates;
    this.cloudFormationRole = this.createCloudFormationRole(stack);
    if (props.azure) this.azureTemplate = new s3assets.Asset(this, 'AzureTemplate', { path: props.azure.templateFile });

    const functions = this.createFunctions(props, settings);
    this.functions = functions;
    const stackArns = stack.formatArn({
      service: 'cloudformation',
      resource: 'stack',
      resourceName: `${CLUSTER_STACK_PREFIX}*/*`,
    });
    this.grantResultsAccess(functions, stack);
    this.grantStackAccess(functions, stack, stackArns, props);
    this.grantCommandAccess(functions, stack);
    this.faultNodeRole = this.createFaultNodeRole(functions, stack);
    this.grantClusterSecrets(functions, stack);
    if (props.azure)
      this.grantAzure(props.azure.credentialsSecret, functions, (name, sid, action, part) =>
        this.grantRawObjects(functions[name]!, sid, action, part),
      );
    if (props.azure?.faultCredentialsSecret)
      this.grantFaultCredentials(props.azure.faultCredentialsSecret, functions.fault!);

    this.stateMachine = this.createStateMachine(settings.maxConcurrency, functions);
    this.failureRule = new events.Rule(this, 'FailureRule', {
      description:
        'Tears down the clusters of a failed, timed-out or aborted benchmark execution and records the run FAILED',
      eventPattern: {
        source: ['aws.states'],
        detailType: ['Step Functions Execution Status Change'],
        detail: { status: ['FAILED', 'TIMED_OUT', 'ABORTED'], stateMachineArn: [this.stateMachine.stateMachineArn] },
      },
      targets: [new targets.LambdaFunction(functions['failure-handler']!, { retryAttempts: 4 })],
    });
    this.sweeperRule = new events.Rule(this, 'SweeperRule', {
      description: 'Hourly: deletes rmqbench cluster stacks whose expiry tag has passed',
      schedule: events.Schedule.rate(Duration.hours(1)),
      targets: [new targets.LambdaFunction(functions.sweeper!)],
    });

    if (props.schedule) {
      const role = new iam.Role(this, 'SchedulerRole', {
        assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com'),
      });
      this.stateMachine.grantStartExecution(role);
      this.schedule = new scheduler.CfnSchedule(this, 'Schedule', {
        scheduleExpression: props.schedule.expression,
        flexibleTimeWindow: { mode: 'OFF' },
        target: {
          arn: this.stateMachine.stateMachineArn,
          roleArn: role.roleArn,
          input: JSON.stringify({ plan: props.schedule.plan, target: 'aws' }),
        },
      });
    }
  }

  /** The raw PerfTest output bucket (runs/<runId>/...), expired by lifecycle rule. */
  private createRawOutputBucket(retentionDays: number, removalPolicy: RemovalPolicy): s3.Bucket {
    const bucket = new s3.Bucket(this, 'RawOutput', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      lifecycleRules: [
        { expiration: Duration.days(retentionDays), abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      removalPolicy,
    });
    Validations.of(bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Raw PerfTest output written by the controller and load generators only; CloudTrail records their API ' +
        'calls, and it expires by lifecycle rule.',
    });
    skipCheckov(bucket, [
      {
        id: 'CKV_AWS_18',
        comment:
          'Raw PerfTest output written by the controller and load generators only; CloudTrail records their ' +
          'API calls, and it expires by lifecycle rule.',
      },
      {
        id: 'CKV_AWS_21',
        comment:
          'Each object is written once per repetition under a key of its own and expires by lifecycle rule; ' +
          'versions would only keep copies of benchmark output.',
      },
    ]);
    return bucket;
  }

  /**
   * The security group of the functions that connect to clusters (smoke test; readiness with Azure), which every
   * cluster admits.
   */
  private createClusterClientSecurityGroup(props: BenchmarkControllerProps): ec2.SecurityGroup {
    const group = new ec2.SecurityGroup(this, 'SmokeTestSecurityGroup', {
      vpc: this.vpc,
      description: 'rmqbench smoke-test function: AMQP to the cluster load balancers, HTTPS to Secrets Manager',
      allowAllOutbound: false,
    });
    // AWS clusters' load balancers are internal to this VPC, in the cluster subnets, and listen on AMQP 5672.
    for (const peer of this.clusterSubnetPeers())
      group.addEgressRule(peer, ec2.Port.tcp(AMQP_PORT), 'AMQP to the cluster load balancers in the cluster subnets');
    group.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(443), 'AWS APIs and Secrets Manager through the NAT gateway');
    // An Azure cluster's load balancer is public and forwards only AMQPS 5671 and management HTTPS 15671
    // (bicep/modules/cluster.bicep amqpsPort, managementTlsPort), from the NAT gateway's addresses its NSG admits.
    if (props.azure) {
      for (const [port, what] of [
        [AZURE_AMQPS_PORT, 'AMQPS'],
        [AZURE_MANAGEMENT_HTTPS_PORT, 'management HTTPS'],
      ] as const) {
        group.addEgressRule(
          ec2.Peer.anyIpv4(),
          ec2.Port.tcp(port),
          `${what} to Azure cluster load balancers (public endpoints)`,
        );
      }
    }
    return group;
  }

  /** The pinned node image parameter and the cluster templates every launch uses (S3 assets). */
  private createClusterTemplates(stack: Stack) {
    // The nodes' AMI is pinned per controller deployment: this parameter takes the latest Amazon Linux 2023 x86-64
    // image
    // when the controller is deployed (its SSM-typed template parameter is resolved then), and every cluster template
    // reads
    // it by name, so all runs between two controller deployments use the same image (the cluster stack outputs its id).
    if (Token.isUnresolved(stack.stackName))
      throw new Error(
        'the stack of a BenchmarkController needs a literal stackName: it names the pinned node image parameter',
      );
    // The parameter's name is the stack's (and the CLI finds a controller by its stack's name, --stack): a second
    // controller in the same stack would fail its deployment on a parameter that already exists.
    const first = CONTROLLER_OF_STACK.get(stack);
    if (first)
      throw new Error(
        `a stack holds one BenchmarkController: ${stack.stackName} already has ${first.node.path} (its pinned node ` +
          `image parameter ${clusterNodeImageParameterName(stack.stackName)} is named after the stack, and the CLI ` +
          'finds a controller by its stack name); put the other one in a stack of its own',
      );
    CONTROLLER_OF_STACK.set(stack, this);
    const nodeImageParameterName = clusterNodeImageParameterName(stack.stackName);
    const clusterNodeImage = new ssm.StringParameter(this, 'ClusterNodeImage', {
      parameterName: nodeImageParameterName,
      stringValue: ec2.MachineImage.latestAmazonLinux2023({ cpuType: ec2.AmazonLinuxCpuType.X86_64 }).getImage(this)
        .imageId,
      dataType: ssm.ParameterDataType.AWS_EC2_IMAGE,
      description:
        'AMI of the rmqbench cluster nodes, pinned at the last controller deployment (latest Amazon Linux 2023 ' +
        'x86-64 then)',
    });
    const templatesDir = synthesizeClusterTemplates(nodeImageParameterName);
    const clusterTemplates = Object.fromEntries(
      CONTROLLER_RELEASES.map((release) => [
        release.rabbitmqVersion,
        new s3assets.Asset(this, `ClusterTemplateRabbitMq${release.rabbitmqVersion.replace(/\./g, '')}`, {
          path: join(templatesDir, clusterTemplateFileName(release)),
        }),
      ]),
    );
    const kafkaClusterTemplates = Object.fromEntries(
      KAFKA_CONTROLLER_BROKER_COUNTS.map((brokers) => [
        brokers,
        new s3assets.Asset(this, `ClusterTemplateKafka${brokers}Brokers`, {
          path: join(templatesDir, kafkaClusterTemplateFileName(brokers)),
        }),
      ]),
    );
    const natsClusterTemplates = Object.fromEntries(
      NATS_CONTROLLER_NODE_COUNTS.map((nodes) => [
        nodes,
        new s3assets.Asset(this, `ClusterTemplateNats${nodes}Nodes`, {
          path: join(templatesDir, natsClusterTemplateFileName(nodes)),
        }),
      ]),
    );
    return { clusterNodeImage, clusterTemplates, kafkaClusterTemplates, natsClusterTemplates };
  }

  /** The role CloudFormation creates and deletes cluster stacks with. */
  private createCloudFormationRole(stack: Stack): iam.Role {
    const role = new iam.Role(this, 'CloudFormationRole', {
      assumedBy: new iam.ServicePrincipal('cloudformation.amazonaws.com'),
      description:
        'Creates and deletes rmqbench cluster stacks (security groups, EC2, load balancer, IAM roles of the nodes)',
      managedPolicies: [iam.ManagedPolicy.fromAwsManagedPolicyName('PowerUserAccess')],
    });
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'NodeRolesOfClusterStacks',
        // The IAM handler permissions of the cluster templates' resource types (a test derives them from the registry
        // schemas).
        actions: [...CLUSTER_STACK_IAM_ACTIONS],
        resources: [
          stack.formatArn({ service: 'iam', region: '', resource: 'role', resourceName: `${CLUSTER_STACK_PREFIX}*` }),
          stack.formatArn({
            service: 'iam',
            region: '',
            resource: 'instance-profile',
            resourceName: `${CLUSTER_STACK_PREFIX}*`,
          }),
        ],
      }),
    );
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/PowerUserAccess]',
      reason:
        'Only CloudFormation assumes this role, to build whole cluster stacks (security groups, EC2, NLB, ' +
        'Secrets Manager); callers can only pass it.',
    });
    for (const resource of ['role', 'instance-profile']) {
      Validations.of(role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${nagResourceText(
          this,
          stack.formatArn({ service: 'iam', region: '', resource, resourceName: `${CLUSTER_STACK_PREFIX}*` }),
        )}]`,
        reason:
          `CloudFormation names the node ${resource}s of a cluster stack <stackName>-<logicalId>-<suffix> at run ` +
          `time; the grant stops at the rmqbench- stack prefix.`,
      });
    }
    return role;
  }

  /** Every function's environment: the table, bucket, templates and role it works with (and Azure's settings). */
  private functionEnvironment(props: BenchmarkControllerProps, settings: ControllerSettings): Record<string, string> {
    const environment: Record<string, string> = {
      RESULTS_TABLE: this.resultsTable.tableName,
      RAW_OUTPUT_BUCKET: this.rawOutputBucket.bucketName,
      ...Object.fromEntries(
        CONTROLLER_RELEASES.map((release) => [
          clusterTemplateUrlVariable(release),
          this.clusterTemplates[release.rabbitmqVersion]!.httpUrl,
        ]),
      ),
      ...Object.fromEntries(
        KAFKA_CONTROLLER_BROKER_COUNTS.map((brokers) => [
          kafkaClusterTemplateUrlVariable(brokers),
          this.kafkaClusterTemplates[brokers]!.httpUrl,
        ]),
      ),
      ...Object.fromEntries(
        NATS_CONTROLLER_NODE_COUNTS.map((nodes) => [
          natsClusterTemplateUrlVariable(nodes),
          this.natsClusterTemplates[nodes]!.httpUrl,
        ]),
      ),
      CLOUDFORMATION_ROLE_ARN: this.cloudFormationRole.roleArn,
      EXPIRY_HOURS: String(settings.expiryHours),
      LAUNCH_TIMEOUT_MINUTES: String(settings.launchTimeoutMinutes),
    };
    if (props.azure) {
      Object.assign(environment, {
        AZURE_CREDENTIALS_SECRET_ARN: props.azure.credentialsSecret.secretArn,
        AZURE_TEMPLATE_S3_URI: this.azureTemplate!.s3ObjectUrl,
        AZURE_LOCATION: props.azure.location,
        // faultPrincipalId is an object id, not a secret: every deployment gets it, and only the fault function the
        // secret.
        AZURE_PARAMETERS_JSON: JSON.stringify({
          ...(props.azure.parameters ?? {}),
          ...(props.azure.faultPrincipalId ? { faultPrincipalId: props.azure.faultPrincipalId } : {}),
        }),
      });
    }
    return environment;
  }

  /** One workflow function from its bundle, with the checkov and cdk-nag findings every function shares answered. */
  private makeFunction(
    name: string,
    environment: Record<string, string>,
    bundleDir: string,
    timeout = Duration.minutes(1),
    network: Pick<lambda.FunctionProps, 'vpc' | 'vpcSubnets' | 'securityGroups'> = {},
  ): lambda.Function {
    const fn = new lambda.Function(this, `${pascal(name)}Function`, {
      ...network,
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: lambda.Code.fromAsset(join(bundleDir, name)),
      timeout,
      memorySize: 512,
      tracing: lambda.Tracing.ACTIVE,
      environment,
      description: `rmqbench ${name}`,
    });
    skipCheckov(fn, [
      {
        id: 'CKV_AWS_115',
        comment:
          'The workflow bounds how often each function runs (one execution drives at most its Map ' +
          'concurrency); reserved concurrency would take from the account pool for functions that are idle ' +
          'between runs.',
      },
      {
        id: 'CKV_AWS_116',
        comment:
          'Step Functions invokes these synchronously and retries or catches each failure (a dead-letter queue ' +
          'applies to asynchronous invocations); the failure handler and sweeper, invoked by EventBridge, are ' +
          'retried by it and backed by the hourly sweep.',
      },
      ...(network.vpc
        ? []
        : [
            {
              id: 'CKV_AWS_117',
              comment:
                'Calls only AWS APIs (CloudFormation, SSM, S3, DynamoDB, Secrets Manager, ARM over HTTPS): it ' +
                'needs no VPC; only the functions that connect to a cluster (smoke test; readiness with Azure) ' +
                'run in it.',
            },
          ]),
      {
        id: 'CKV_AWS_173',
        comment:
          'The environment holds names and ARNs only (table, bucket, template URL, secret ARN): no secret, so ' +
          'the AWS managed key suffices.',
      },
    ]);
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason: 'The AWS-managed minimum for a function to write its own logs.',
    });
    // Active tracing grants xray:PutTraceSegments / PutTelemetryRecords on "*" (the only "*" grant besides the two
    // listing actions below; the construct test pins the complete list of actions on "*").
    Validations.of(fn.role!).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'X-Ray PutTraceSegments / PutTelemetryRecords (and, where granted, ListStacks, ' +
        'DescribeInstanceInformation, DescribeInstances, GetCommandInvocation, ListMetrics and GetMetricData) ' +
        'have no resource-level permissions.',
    });
    return fn;
  }

  /** The workflow's functions, with their timeouts and, for those that connect to a cluster, their network. */
  private createFunctions(
    props: BenchmarkControllerProps,
    settings: ControllerSettings,
  ): Record<string, lambda.Function> {
    const environment = this.functionEnvironment(props, settings);
    const makeFunction = (
      name: string,
      timeout?: Duration,
      network?: Pick<lambda.FunctionProps, 'vpc' | 'vpcSubnets' | 'securityGroups'>,
    ) => this.makeFunction(name, environment, settings.bundleDir, timeout, network);
    const acknowledgeVpcAccessRole = (fn: lambda.Function) =>
      Validations.of(fn).acknowledge({
        id:
          'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/' +
          'AWSLambdaVPCAccessExecutionRole]',
        reason: 'The AWS-managed minimum for a function to create and delete its network interfaces in the VPC.',
      });
    const functions: Record<string, lambda.Function> = {};
    for (const name of new Set(Object.values(FUNCTIONS)))
      if (!['smoke-test', 'start-repetition', 'fault', 'ingest-repetition', 'check-cluster'].includes(name))
        functions[name] = makeFunction(name);
    // Functions that connect to a cluster run in the clusters' subnets with the cluster clients' security group: an AWS
    // cluster's load balancer is internal to the VPC, and an Azure cluster's NSG admits only the NAT gateway's
    // addresses.
    // A function reaches the internet through the NAT gateway only when it is attached to the VPC; outside it, its
    // requests leave from AWS-owned addresses
    // (https://docs.aws.amazon.com/lambda/latest/dg/configuration-vpc-internet.html).
    const clusterClient = {
      vpc: this.vpc,
      vpcSubnets: { subnets: [...this.clusterSubnets] },
      securityGroups: [this.smokeTestSecurityGroup],
    };
    // CheckClusterReady: on Azure it GETs the management API on the public load balancer
    // (lambdas/check-cluster/azure.ts).
    functions['check-cluster'] = makeFunction('check-cluster', Duration.minutes(1), props.azure ? clusterClient : {});
    if (props.azure) acknowledgeVpcAccessRole(functions['check-cluster']);
    // IngestRepetition's metricsOnly mode (before an azure teardown) reads every late repetition of a cluster again,
    // one after another.
    functions['ingest-repetition'] = makeFunction('ingest-repetition', Duration.minutes(5));
    // StartRepetition retries SendCommand while the load generator's SSM agent registers (InvalidInstanceId), within
    // its own time.
    functions['start-repetition'] = makeFunction('start-repetition', Duration.minutes(5));
    // The smoke test connects to a cluster's internal load balancer: it runs in the clusters' subnets. A Kafka
    // cluster's
    // smoke test is a script on the load generator (SSM Run Command), which may first wait for the generator's boot.
    functions['smoke-test'] = makeFunction('smoke-test', Duration.minutes(5), clusterClient);
    acknowledgeVpcAccessRole(functions['smoke-test']);
    // The fault step waits for its command on the node within the invocation (a heal waits for the broker's boot).
    functions.fault = makeFunction('fault', Duration.minutes(5));
    functions['failure-handler'] = makeFunction('failure-handler', Duration.minutes(5));
    // A launch under way when an execution is stopped still runs to its end (stopping an execution does not stop the
    // Lambda
    // invocations it started): the failure handler lists the run's stacks again once the launch function's timeout has
    // passed since the execution ended (well inside its own 5 minutes).
    functions['failure-handler'].addEnvironment(
      'LAUNCH_FUNCTION_TIMEOUT_SECONDS',
      String(functions['launch-cluster']!.timeout!.toSeconds()),
    );
    functions.sweeper = makeFunction('sweeper', Duration.minutes(5));
    return functions;
  }

  /**
   * The results table items and raw-output objects each function reads or writes, and the launcher's template objects.
   */
  private grantResultsAccess(functions: Record<string, lambda.Function>, stack: Stack): void {
    // Exactly the item operations ResultsStore performs for each function, on the table only (none of them queries the
    // index).
    const grantTable = (name: string, actions: string[]) => {
      functions[name]!.addToRolePolicy(
        new iam.PolicyStatement({
          sid: 'ResultsTableItems',
          actions: actions.map((action) => `dynamodb:${action}`),
          resources: [this.resultsTable.tableArn],
        }),
      );
      this.resultsTable.encryptionKey?.grantEncryptDecrypt(functions[name]!);
    };
    grantTable('run-record', ['PutItem', 'UpdateItem', 'Query']);
    // Query: the metrics re-read before an azure teardown (IngestRepetition "metricsOnly") reads the run's repetitions
    // and their metrics first.
    grantTable('ingest-repetition', ['BatchWriteItem', 'Query']);
    grantTable('failure-handler', ['UpdateItem', 'Query']);
    // The sweeper reads a run's state before deleting its expired cluster: a RUNNING run keeps it
    // (core/cloud/cleanup.ts).
    grantTable('sweeper', ['Query']);

    // The raw output: the load generator uploads runs/<runId>/raw/…, check-repetition assembles
    // runs/<runId>/ingest/…, ingest-repetition reads that.
    const rawObjectGrant = (name: string, sid: string, action: string, part: string) =>
      this.grantRawObjects(functions[name]!, sid, action, part);
    rawObjectGrant('check-repetition', 'ReadRawPerfTestOutput', 's3:GetObject', 'raw');
    rawObjectGrant('check-repetition', 'WriteIngestObjects', 's3:PutObject', 'ingest');
    rawObjectGrant('ingest-repetition', 'ReadIngestObjects', 's3:GetObject', 'ingest');

    // CloudFormation reads a TemplateURL with the caller's permissions: the launcher may read exactly the template
    // objects.
    functions['launch-cluster']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadClusterTemplates',
        actions: ['s3:GetObject'],
        resources: [
          ...Object.values(this.clusterTemplates),
          ...Object.values(this.kafkaClusterTemplates),
          ...Object.values(this.natsClusterTemplates),
        ].map((asset) =>
          stack.formatArn({
            service: 's3',
            region: '',
            account: '',
            resource: asset.s3BucketName,
            resourceName: asset.s3ObjectKey,
          }),
        ),
      }),
    );
  }

  /**
   * The raw output: the load generator uploads runs/<runId>/raw/…, check-repetition assembles
   * runs/<runId>/ingest/…, ingest-repetition reads that.
   */
  private grantRawObjects(fn: lambda.Function, sid: string, action: string, part: string): void {
    const objects = this.rawOutputBucket.arnForObjects(`runs/*/${part}/*`);
    fn.addToRolePolicy(new iam.PolicyStatement({ sid, actions: [action], resources: [objects] }));
    Validations.of(fn.role!).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagResourceText(this, objects)}]`,
      reason:
        `The wildcards are the run id and the file names under runs/<runId>/${part}/ of the controller's own raw ` +
        `output bucket, which are known only at run time.`,
    });
  }

  /** Creating, following and deleting the run's cluster stacks, and their boot logs. */
  private grantStackAccess(
    functions: Record<string, lambda.Function>,
    stack: Stack,
    stackArns: string,
    props: BenchmarkControllerProps,
  ): void {
    const passRole = new iam.PolicyStatement({
      sid: 'PassCloudFormationRole',
      actions: ['iam:PassRole'],
      resources: [this.cloudFormationRole.roleArn],
    });
    const acknowledgeRunStacks = (name: string) =>
      Validations.of(functions[name]!.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${nagResourceText(this, stackArns)}]`,
        reason:
          'Cluster stacks are named rmqbench-<runId>-c<n> at run time and their ARN ends with a stack id ' +
          'CloudFormation generates; the grant stops at the rmqbench- prefix.',
      });
    const access: StackAccess = { functions, stack, stackArns, passRole, acknowledgeRunStacks };
    this.grantLaunchAccess(access, props);
    this.grantCheckClusterAccess(access);
    this.grantTeardownAccess(access);
  }

  /** LaunchCluster: creates run stacks with CloudFormation's role, and knows the cluster network. */
  private grantLaunchAccess(access: StackAccess, props: BenchmarkControllerProps): void {
    const { functions, stackArns, passRole, acknowledgeRunStacks } = access;
    functions['launch-cluster']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'CreateRunStacks',
        actions: ['cloudformation:CreateStack', 'cloudformation:TagResource'],
        resources: [stackArns],
      }),
    );
    functions['launch-cluster']!.addToRolePolicy(passRole);
    acknowledgeRunStacks('launch-cluster');
    // The cluster template's network parameters (see synthesizeClusterTemplates) and the release of plan clusters
    // without rabbitmqVersion.
    functions['launch-cluster']!.addEnvironment(
      'CLUSTER_DEFAULT_RABBITMQ_VERSION',
      CONTROLLER_DEFAULT_RELEASE.rabbitmqVersion,
    );
    functions['launch-cluster']!.addEnvironment('CLUSTER_VPC_ID', this.vpc.vpcId);
    functions['launch-cluster']!.addEnvironment(
      'CLUSTER_SUBNET_IDS',
      Fn.join(
        ',',
        this.clusterSubnets.map((subnet) => subnet.subnetId),
      ),
    );
    functions['launch-cluster']!.addEnvironment(
      'CLUSTER_AVAILABILITY_ZONES',
      Fn.join(
        ',',
        this.clusterSubnets.map((subnet) => subnet.availabilityZone),
      ),
    );
    functions['launch-cluster']!.addEnvironment(
      'CLUSTER_CLIENT_SECURITY_GROUP_ID',
      this.smokeTestSecurityGroup.securityGroupId,
    );
    // Azure load balancers are public, their NSG admitting the smoke test's egress addresses (the controller VPC's NAT
    // gateway).
    if (props.azure)
      functions['launch-cluster']!.addEnvironment(
        'CONTROLLER_EGRESS_ADDRESSES',
        Fn.join(',', props.controllerEgressAddresses ?? this.natGatewayAddresses()),
      );
  }

  /** CheckCluster: follows a run stack, the load generator's registration and a failed node's boot log. */
  private grantCheckClusterAccess(access: StackAccess): void {
    const { functions, stack, stackArns, acknowledgeRunStacks } = access;
    // DescribeStackEvents: the reason a cluster stack failed goes into the run's error.
    functions['check-cluster']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'DescribeRunStacks',
        actions: ['cloudformation:DescribeStacks', 'cloudformation:DescribeStackEvents'],
        resources: [stackArns],
      }),
    );
    // Readiness includes the load generator being an online SSM managed instance; DescribeInstanceInformation has no
    // resource-level permission
    // (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awssystemsmanager.html).
    functions['check-cluster']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'LoadGeneratorRegistration',
        actions: ['ssm:DescribeInstanceInformation'],
        resources: ['*'],
      }),
    );
    acknowledgeRunStacks('check-cluster');
    // A failed node's boot log tail goes into the run's error: its stream in the cluster stack's boot log group, whose
    // name
    // CloudFormation generates from the stack name (rmqbench-...). GetLogEvents is authorized on the log stream
    // (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatchlogs.html).
    const bootLogStreams = stack.formatArn({
      service: 'logs',
      resource: 'log-group',
      resourceName: 'rmqbench-*:log-stream:*',
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    functions['check-cluster']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadClusterBootLogs',
        actions: ['logs:GetLogEvents'],
        resources: [bootLogStreams],
      }),
    );
    Validations.of(functions['check-cluster']!.role!).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagResourceText(this, bootLogStreams)}]`,
      reason:
        'Boot log groups are created by the cluster stacks (rmqbench-<runId>-c<n>-BootLogs-<suffix>) at run ' +
        'time; the grant is read-only GetLogEvents and stops at the rmqbench- prefix.',
    });
  }

  /** TeardownCluster, the failure handler and the sweeper: delete run stacks and their boot log groups. */
  private grantTeardownAccess(access: StackAccess): void {
    const { functions, stack, stackArns, passRole, acknowledgeRunStacks } = access;
    // CheckTeardown follows the deletion and names the resource a DELETE_FAILED stack could not delete.
    functions['teardown-cluster']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'FollowRunStackDeletion',
        actions: ['cloudformation:DescribeStacks', 'cloudformation:DescribeStackEvents'],
        resources: [stackArns],
      }),
    );
    // The boot log group a cluster stack retains (cdk/boot-log.ts) goes with the stack unless the cluster failed.
    // DeleteLogGroup is authorized on the log group
    // (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatchlogs.html).
    const bootLogGroups = stack.formatArn({
      service: 'logs',
      resource: 'log-group',
      resourceName: 'rmqbench-*',
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    functions['teardown-cluster']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'DeleteClusterBootLogs',
        actions: ['logs:DeleteLogGroup'],
        resources: [bootLogGroups],
      }),
    );
    Validations.of(functions['teardown-cluster']!.role!).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagResourceText(this, bootLogGroups)}]`,
      reason:
        'Boot log groups are created by the cluster stacks (rmqbench-<runId>-c<n>-...BootLogs-<suffix>) at run ' +
        'time; the grant stops at the rmqbench- prefix.',
    });
    for (const name of ['teardown-cluster', 'failure-handler', 'sweeper']) {
      functions[name]!.addToRolePolicy(
        new iam.PolicyStatement({
          sid: 'DeleteRunStacks',
          actions: ['cloudformation:DeleteStack'],
          resources: [stackArns],
        }),
      );
      functions[name]!.addToRolePolicy(passRole);
      acknowledgeRunStacks(name);
    }
    for (const name of ['failure-handler', 'sweeper']) {
      // Finding a run's stacks means listing stacks, which has no resource-level permission
      // (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awscloudformation.html); only
      // rmqbench- stacks are then described by name.
      functions[name]!.addToRolePolicy(
        new iam.PolicyStatement({ sid: 'ListStacks', actions: ['cloudformation:ListStacks'], resources: ['*'] }),
      );
      functions[name]!.addToRolePolicy(
        new iam.PolicyStatement({
          sid: 'DescribeControllerStacks',
          actions: ['cloudformation:DescribeStacks'],
          resources: [stackArns],
        }),
      );
    }
  }

  /** SSM commands on the load generators, command results, and the host and broker metrics of a repetition. */
  private grantCommandAccess(functions: Record<string, lambda.Function>, stack: Stack): void {
    const loadGeneratorInstances = stack.formatArn({ service: 'ec2', resource: 'instance', resourceName: '*' });
    // StartRepetition runs PerfTest or the Kafka tools there; SmokeTest runs the Kafka smoke test there (and polls it).
    for (const name of ['start-repetition', 'smoke-test']) {
      functions[name]!.addToRolePolicy(
        new iam.PolicyStatement({
          sid: 'RunShellScriptOnLoadGenerators',
          actions: ['ssm:SendCommand'],
          resources: [loadGeneratorInstances],
          conditions: { StringEquals: { 'ssm:resourceTag/rmqbench:component': 'load-generator' } },
        }),
      );
      Validations.of(functions[name]!.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${nagResourceText(this, loadGeneratorInstances)}]`,
        reason:
          'Load generator instance ids are known only at run time; the statement requires the ' +
          'rmqbench:component=load-generator tag.',
      });
      functions[name]!.addToRolePolicy(
        new iam.PolicyStatement({
          sid: 'RunShellScriptDocument',
          actions: ['ssm:SendCommand'],
          resources: [
            stack.formatArn({ service: 'ssm', account: '', resource: 'document', resourceName: 'AWS-RunShellScript' }),
          ],
        }),
      );
    }
    // GetCommandInvocation has no resource-level permission
    // (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awssystemsmanager.html).
    for (const name of ['check-repetition', 'smoke-test'])
      functions[name]!.addToRolePolicy(
        new iam.PolicyStatement({ sid: 'ReadCommandResults', actions: ['ssm:GetCommandInvocation'], resources: ['*'] }),
      );
    // Host metrics of an AWS repetition: the cluster's agent metrics (namespace rmqbench) are listed and read from
    // CloudWatch. Neither action supports resource-level permissions or a namespace condition key
    // (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatch.html); both only read.
    functions['ingest-repetition']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadHostMetrics',
        actions: ['cloudwatch:ListMetrics', 'cloudwatch:GetMetricData'],
        resources: ['*'],
      }),
    );
    // Broker metrics of an AWS repetition are named like its host metrics (the instance id): IngestRepetition lists the
    // cluster stack's nodes as the fault step does. DescribeInstances has no resource-level permission
    // (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html) and only reads.
    functions['ingest-repetition']!.addToRolePolicy(
      new iam.PolicyStatement({ sid: 'FindBrokerNodeInstances', actions: ['ec2:DescribeInstances'], resources: ['*'] }),
    );
  }

  /**
   * FaultNodeRole, which the fault function assumes for one cluster's nodes, and the fault function's grants.
   *
   * The fault step (lambdas/fault/aws.ts) finds the run's nodes by their stack's tags (ec2:DescribeInstances, which has
   * no resource-level permission: list_amazonec2.html) and runs its script on one of them with SSM under a role scoped
   * to that one cluster: it assumes FaultNodeRole with the session tag rmqbench:cluster-stack=<its cluster's stack
   * name> (sts:TagSession in the trust policy, https://docs.aws.amazon.com/IAM/latest/UserGuide/id_session-tags.html,
   * "Permissions required to add session tags"), and the role may SendCommand only to instances whose
   * aws:cloudformation:stack-name tag equals that session tag (aws:PrincipalTag in a condition, same page), which
   * CloudFormation puts on every Auto Scaling group and the instances it launches
   * (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-autoscaling-autoscalinggroup-tagproperty.html)
   * and on the Kafka brokers' and NATS servers' own AWS::EC2::Instance resources (the resource tagging page:
   * stack-level tags are applied to EC2 instances automatically, whatever PropagateAtLaunch says,
   * https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-resource-tags.html).
   * SendCommand is authorized on the instance and on the document, and the instance resource takes the
   * ssm:resourceTag/<key> condition
   * (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awssystemsmanager.html, SendCommand);
   * GetCommandInvocation has no resource-level permission (same page).
   */
  private createFaultNodeRole(functions: Record<string, lambda.Function>, stack: Stack): iam.Role {
    const faultFunctionRole = functions.fault!.role!;
    const faultNodeRole = new iam.Role(this, 'FaultNodeRole', {
      description:
        'rmqbench fault step: SSM commands on the broker nodes of the one cluster stack named by the session ' +
        'tag rmqbench:cluster-stack',
      assumedBy: new iam.SessionTagsPrincipal(new iam.ArnPrincipal(faultFunctionRole.roleArn)).withConditions({
        StringLike: { [`aws:RequestTag/${CLUSTER_STACK_SESSION_TAG}`]: `${CLUSTER_STACK_PREFIX}*` },
      }),
      maxSessionDuration: Duration.hours(1),
    });
    const clusterNodeInstances = stack.formatArn({ service: 'ec2', resource: 'instance', resourceName: '*' });
    faultNodeRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'RunShellScriptOnTheClustersNodes',
        actions: ['ssm:SendCommand'],
        resources: [clusterNodeInstances],
        conditions: {
          StringEquals: {
            // The nodes of each broker (StringEquals with several values matches any of them: IAM User Guide,
            // reference_policies_condition-logic-multiple-context-keys-or-values).
            'ssm:resourceTag/rmqbench:component': [CLUSTER_NODE_COMPONENT, ...Object.values(BROKER_COMPONENTS)],
            'ssm:resourceTag/aws:cloudformation:stack-name': `\${aws:PrincipalTag/${CLUSTER_STACK_SESSION_TAG}}`,
          },
        },
      }),
    );
    faultNodeRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'RunShellScriptDocument',
        actions: ['ssm:SendCommand'],
        resources: [
          stack.formatArn({ service: 'ssm', account: '', resource: 'document', resourceName: 'AWS-RunShellScript' }),
        ],
      }),
    );
    faultNodeRole.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'ReadCommandResults', actions: ['ssm:GetCommandInvocation'], resources: ['*'] }),
    );
    Validations.of(faultNodeRole).acknowledge(
      {
        id: `AwsSolutions-IAM5[Resource::${nagResourceText(this, clusterNodeInstances)}]`,
        reason:
          'Node instance ids are known only at run time; the statement requires the ' +
          'rmqbench:component tag of a RabbitMQ node, Kafka broker or NATS server and an ' +
          'aws:cloudformation:stack-name tag equal to the ' +
          "session's rmqbench:cluster-stack tag, so one assumed session reaches one cluster's nodes.",
      },
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'ssm:GetCommandInvocation has no resource-level permission (list_awssystemsmanager.html); it only ' +
          'reads command results.',
      },
    );
    functions.fault!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'AssumeFaultNodeRoleWithClusterTag',
        actions: ['sts:AssumeRole', 'sts:TagSession'],
        resources: [faultNodeRole.roleArn],
      }),
    );
    functions.fault!.addEnvironment('FAULT_NODE_ROLE_ARN', faultNodeRole.roleArn);
    functions.fault!.addToRolePolicy(
      new iam.PolicyStatement({ sid: 'FindClusterNodes', actions: ['ec2:DescribeInstances'], resources: ['*'] }),
    );
    return faultNodeRole;
  }

  /** The smoke test reads the admin secret of the run's cluster stacks. */
  private grantClusterSecrets(functions: Record<string, lambda.Function>, stack: Stack): void {
    const clusterSecrets = stack.formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: '*',
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    functions['smoke-test']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadClusterAdminSecrets',
        actions: ['secretsmanager:GetSecretValue'],
        resources: [clusterSecrets],
        conditions: { StringLike: { 'secretsmanager:ResourceTag/rmqbench:run-id': '*' } },
      }),
    );
    Validations.of(functions['smoke-test']!.role!).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagResourceText(this, clusterSecrets)}]`,
      reason:
        'The admin secret of a cluster stack gets a generated name at run time; the statement requires the ' +
        'rmqbench:run-id tag the stack puts on it.',
    });
  }

  /**
   * The workflow's state machine, logging transitions without execution data, allowed to invoke exactly its functions.
   */
  private createStateMachine(maxConcurrency: number, functions: Record<string, lambda.Function>): sfn.StateMachine {
    const logGroup = new logs.LogGroup(this, 'StateMachineLogs', {
      retention: logs.RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // Execution data (inputs and outputs) is not logged, only state transitions.
    skipCheckov(logGroup, [{ id: 'CKV_AWS_158', comment: CHECKOV_REASON.logGroupKms }]);
    const definition = buildBenchmarkDefinition({ maxConcurrency });
    const stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      definitionBody: sfn.DefinitionBody.fromString(JSON.stringify(definition)),
      definitionSubstitutions: Object.fromEntries(
        FUNCTION_PLACEHOLDERS.map((placeholder) => [placeholder, functions[FUNCTIONS[placeholder]]!.functionArn]),
      ),
      tracingEnabled: true,
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
      timeout: Duration.seconds(definition.TimeoutSeconds),
    });
    // The definition invokes unqualified ARNs: no grant on versions (grantInvoke would add <arn>:*).
    stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'InvokeWorkflowFunctions',
        actions: ['lambda:InvokeFunction'],
        resources: [...new Set(Object.values(FUNCTIONS))].map((name) => functions[name]!.functionArn),
      }),
    );
    Validations.of(stateMachine.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'CloudWatch Logs delivery and X-Ray actions, which Step Functions logging and tracing need, have no ' +
        'resource-level permissions.',
    });
    return stateMachine;
  }

  /**
   * Exactly the credentials secret for the functions that call ARM, the template for the launcher, and the raw-output
   * uploads the start function pre-signs.
   */
  /**
   * The fault-only principal's secret: read by the fault function alone, which then runs its Run Commands as that
   * principal.
   */
  private grantFaultCredentials(secret: secretsmanager.ISecret, fault: lambda.Function): void {
    fault.addEnvironment('FAULT_AZURE_CREDENTIALS_SECRET_ARN', secret.secretArn);
    // An imported secret known only by its partial ARN: Secrets Manager appends -<6 characters>.
    fault.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadAzureFaultCredentials',
        actions: ['secretsmanager:GetSecretValue'],
        resources: [secret.secretFullArn ?? `${secret.secretArn}-??????`],
      }),
    );
    secret.encryptionKey?.grantDecrypt(fault);
  }

  private grantAzure(
    secret: secretsmanager.ISecret,
    functions: Record<string, lambda.Function>,
    rawObjectGrant: (name: string, sid: string, action: string, part: string) => void,
  ): void {
    // An imported secret known only by its partial ARN: Secrets Manager appends -<6 characters>.
    const secretArn = secret.secretFullArn ?? `${secret.secretArn}-??????`;
    for (const name of AZURE_FUNCTIONS) {
      functions[name]!.addToRolePolicy(
        new iam.PolicyStatement({
          sid: 'ReadAzureCredentials',
          actions: ['secretsmanager:GetSecretValue'],
          resources: [secretArn],
        }),
      );
      secret.encryptionKey?.grantDecrypt(functions[name]!);
    }
    const template = this.azureTemplate!;
    functions['launch-cluster']!.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadAzureTemplate',
        actions: ['s3:GetObject'],
        resources: [
          Stack.of(this).formatArn({
            service: 's3',
            region: '',
            account: '',
            resource: template.s3BucketName,
            resourceName: template.s3ObjectKey,
          }),
        ],
      }),
    );
    // A pre-signed URL carries the signer's permissions: the Azure load generator uploads with start-repetition's.
    rawObjectGrant('start-repetition', 'PresignRawOutputUploads', 's3:PutObject', 'raw');
  }

  /** The public IPs of the Elastic IPs of the NAT gateways of the VPC this controller created (one NAT gateway). */
  private natGatewayAddresses(): string[] {
    const eips = natGatewayEips(this.vpc);
    if (eips.length === 0)
      throw new Error('the controller VPC has no NAT gateway Elastic IP: give controllerEgressAddresses');
    return eips.map((eip) => eip.attrPublicIp);
  }

  /**
   * Where the cluster clients' AMQP may go: the cluster subnets, where the clusters' internal load balancers and nodes
   * are (so a subnet from a secondary CIDR block is covered, which the VPC's primary CIDR is not); the VPC's primary
   * CIDR
   * when a given VPC's subnets do not say their blocks (then the construct warns).
   */
  private clusterSubnetPeers(): ec2.IPeer[] {
    const blocks: string[] = [];
    for (const subnet of this.clusterSubnets) {
      try {
        blocks.push(subnet.ipv4CidrBlock);
      } catch {
        Annotations.of(this).addWarningV2(
          'rmqbench:vpcSubnetCidrUnknown',
          `vpc: subnet ${subnet.subnetId} does not say its IPv4 CIDR block, so the smoke test's AMQP egress is ` +
            `the VPC's primary CIDR; a cluster subnet from a secondary CIDR block would be unreachable (give ` +
            `privateSubnetIpv4CidrBlocks to Vpc.fromVpcAttributes, or use Vpc.fromLookup)`,
        );
        return [ec2.Peer.ipv4(this.vpc.vpcCidrBlock)];
      }
    }
    return [...new Set(blocks)].map((block) => ec2.Peer.ipv4(block));
  }

  private createVpc(): ec2.Vpc {
    // An environment-agnostic stack knows only 2 placeholder zones (CDK's Stack.availabilityZones): ask CloudFormation
    // for the region's first 3 instead.
    const agnostic = Stack.of(this).availabilityZones.some((zone) => Token.isUnresolved(zone));
    const zoneIndexes = Array.from({ length: CLUSTER_AVAILABILITY_ZONE_COUNT }, (_, index) => index);
    const vpc = new ec2.Vpc(this, 'Vpc', {
      ...(agnostic
        ? { availabilityZones: zoneIndexes.map((index) => Fn.select(index, Fn.getAzs())) }
        : { maxAzs: CLUSTER_AVAILABILITY_ZONE_COUNT }),
      natGateways: 1,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        { name: 'clusters', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 20 },
      ],
    });
    const flowLog = vpc.addFlowLog('FlowLog');
    // Load-generator uploads and Amazon Linux 2023's package repositories (S3 buckets in the region) go through this
    // free
    // gateway endpoint instead of the NAT gateway, which bills per GB processed
    // (https://docs.aws.amazon.com/vpc/latest/privatelink/gateway-endpoints.html: "no additional charge";
    // https://docs.aws.amazon.com/linux/al2023/ug/managing-repos-os-updates.html: the repositories are served from S3).
    vpc.addGatewayEndpoint('S3', { service: ec2.GatewayVpcEndpointAwsService.S3 });
    skipCheckov(flowLog.node.findChild('LogGroup'), [{ id: 'CKV_AWS_158', comment: CHECKOV_REASON.logGroupKms }]);
    return vpc;
  }

  private createTable(removalPolicy: RemovalPolicy): dynamodb.Table {
    const table = new dynamodb.Table(this, 'Results', {
      partitionKey: { name: TABLE_KEYS.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_KEYS.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      removalPolicy,
    });
    skipCheckov(table, [{ id: 'CKV_AWS_119', comment: CHECKOV_REASON.awsManagedEncryption }]);
    table.addGlobalSecondaryIndex({
      indexName: TABLE_KEYS.gsi1Name,
      partitionKey: { name: TABLE_KEYS.gsi1PartitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_KEYS.gsi1SortKey, type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType.KEYS_ONLY,
    });
    return table;
  }
}

/** Synthesized template folders, by node image parameter name. */
const templatesDirs = new Map<string, string>();

/**
 * The rmqbench:component tag of cluster nodes (lambdas/fault/aws.ts finds them by it; the fault function's SendCommand
 * requires it).
 */
export const CLUSTER_NODE_COMPONENT = 'rabbitmq-node';

export { CLUSTER_STACK_SESSION_TAG };

/** The SSM parameter a controller stack pins its cluster nodes' AMI in (one per controller stack). */
/** The controller each stack holds (one at most: createClusterTemplates). */
const CONTROLLER_OF_STACK = new WeakMap<Stack, BenchmarkController>();

export const clusterNodeImageParameterName = (controllerStackName: string) =>
  `/rmqbench/${controllerStackName}/cluster-node-image-id`;
/** The node image parameter the cluster templates read when built on their own (tests, tools). */
export const DEFAULT_CLUSTER_NODE_IMAGE_PARAMETER = clusterNodeImageParameterName('rmqbench');

/**
 * The app of the cluster + load generator templates, one stack per shipped release (`Cluster<version without dots>`).
 * A cluster stack creates no VPC: it is placed in the controller's (parameters VpcId, PrivateSubnetIds and
 * AvailabilityZones, 2 or 3 of each; the nodes and the load balancer use every subnet given) and admits AMQP and
 * management from the smoke-test function's security group. Its node group's creation policy waits for NodeCount
 * signals.
 * Everything that differs between plan clusters of one release is a parameter: `NodeCount` (1–7, the pinned size of
 * the node group) and `BrokerPolicies` (the JSON array of `rabbitmqctl set_policy` argument vectors
 * core/broker/broker-config.ts
 * generates for the plan cluster, which every node applies once it has started). rabbitmq.conf and enabled_plugins are
 * the generator's output, which for the AWS peer discovery backend depends on neither node count nor topology.
 */
export function buildClusterTemplateApp(
  outdir?: string,
  nodeImageParameterName: string = DEFAULT_CLUSTER_NODE_IMAGE_PARAMETER,
): App {
  const app = new App(outdir ? { outdir } : {});
  for (const release of CONTROLLER_RELEASES) buildRabbitMqClusterStack(app, release, nodeImageParameterName);
  for (const brokers of KAFKA_CONTROLLER_BROKER_COUNTS) buildKafkaClusterStack(app, brokers, nodeImageParameterName);
  for (const nodes of NATS_CONTROLLER_NODE_COUNTS) buildNatsClusterStack(app, nodes, nodeImageParameterName);
  return app;
}

/** One RabbitMQ cluster + load generator template for `release` (see buildClusterTemplateApp). */
function buildRabbitMqClusterStack(
  app: App,
  release: (typeof CONTROLLER_RELEASES)[number],
  nodeImageParameterName: string,
) {
  const stack = new Stack(app, clusterTemplateStackName(release));
  const { bucketName, subnetIds, vpc } = controllerPlacement(stack, '');
  const { clientSecurityGroupId, nodeCount, instanceType, policies } = rabbitMqTemplateParameters(stack);
  // The node group and the load balancer are given the whole subnet list (below), the constructs only the first 2.
  // Built for the largest cluster with the default topology (no policies in its user data); the node group's size and
  // the policies then come from the parameters.
  const cluster = new RabbitMqCluster(stack, 'Cluster', {
    vpc,
    release,
    // The AMI the controller pinned (an SSM-typed parameter of this template, defaulting to that name).
    machineImage: ec2.MachineImage.fromSsmParameter(nodeImageParameterName, { os: ec2.OperatingSystemType.LINUX }),
    nodeCount: CLUSTER_NODE_COUNT_RANGE.max,
    pinCapacity: true,
    allowedPeers: [ec2.Peer.securityGroupId(clientSecurityGroupId.valueAsString)],
  });
  if (cluster.brokerConfig.policies.length > 0)
    throw new Error('the cluster template must be built without policies: they come from its BrokerPolicies parameter');
  pinNodeGroupToParameters(cluster, { nodeCount, instanceType, subnetIds });
  cluster.launchTemplate.userData!.addCommands(
    '# ...here those of the plan cluster, from the BrokerPolicies parameter (only set_policy argument vectors ' +
      'are run).',
    `cat > /etc/rabbitmq/rmqbench-policies.json ` +
      `<<'${POLICIES_DELIMITER}'\n${policies.valueAsString}\n${POLICIES_DELIMITER}`,
    `python3 -c 'import json,subprocess,sys
for args in json.load(open(sys.argv[1])):
    if not (isinstance(args, list) and args and args[0] == "set_policy" ` +
      `and all(isinstance(arg, str) for arg in args)): sys.exit("not a set_policy argument vector: %r" % (args,))
    subprocess.run(["rabbitmqctl", *args], check=True)' /etc/rabbitmq/rmqbench-policies.json`,
  );
  const loadGenerator = new LoadGenerator(stack, 'LoadGenerator', {
    vpc,
    resultsBucket: s3.Bucket.fromBucketName(stack, 'Results', bucketName.valueAsString),
    resultsPrefix: 'runs/',
    cluster,
    count: MAX_LOAD_GENERATORS,
  });
  // As many of them as the plan cluster's loadGenerators: the LoadGeneratorCount parameter (issue 27).
  launchLoadGeneratorsByParameter(stack, loadGenerator, { resultsBucketName: bucketName.valueAsString });
  Tags.of(loadGenerator).add('rmqbench:component', 'load-generator');
  // The node group's tag, which it copies to every node it launches: the fault step may run commands on these only.
  Tags.of(cluster.autoScalingGroup).add('rmqbench:component', CLUSTER_NODE_COMPONENT);
}

/** The template's parameters the launch function sets per plan cluster (aws-launch.ts clusterStackParameters). */
function rabbitMqTemplateParameters(stack: Stack) {
  const clientSecurityGroupId = new CfnParameter(stack, 'SmokeTestSecurityGroupId', {
    type: 'AWS::EC2::SecurityGroup::Id',
    description: 'Security group of the smoke-test function, allowed to AMQP and management',
  });
  const nodeCount = new CfnParameter(stack, 'NodeCount', {
    type: 'Number',
    minValue: CLUSTER_NODE_COUNT_RANGE.min,
    maxValue: CLUSTER_NODE_COUNT_RANGE.max,
    description:
      `Number of RabbitMQ nodes, ${CLUSTER_NODE_COUNT_RANGE.min} to ${CLUSTER_NODE_COUNT_RANGE.max} (the node ` +
      `group is pinned at it)`,
  });
  const instanceType = new CfnParameter(stack, 'InstanceType', {
    type: 'String',
    default: RabbitMqInstanceTiers.LOW.toString(),
    // x86-64 only: an attribute letter g after the generation digit means Graviton (Arm), and a1 is Arm too
    // (https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html); Team RabbitMQ's RPMs are
    // x86-64 only.
    allowedPattern: CLUSTER_INSTANCE_TYPE_PATTERN,
    constraintDescription:
      'must be an x86-64 EC2 instance type such as c5.xlarge (Arm/Graviton types cannot install Erlang from ' +
      "Team RabbitMQ's RPM repositories)",
    description: "EC2 instance type of the RabbitMQ nodes (the plan cluster's instanceType)",
  });
  const policies = new CfnParameter(stack, 'BrokerPolicies', {
    type: 'String',
    default: '[]',
    // One line (no here-document delimiter can appear on its own line) holding a JSON array.
    allowedPattern: '^\\[.*\\]$',
    maxLength: CLUSTER_POLICIES_MAX_LENGTH,
    description:
      'JSON array of rabbitmqctl set_policy argument vectors (core/broker/broker-config.ts policyCommandArgs) ' +
      'every node applies after it has started',
  });
  return { clientSecurityGroupId, nodeCount, instanceType, policies };
}

/**
 * The node group sized, typed and placed by the template's parameters (the construct was built for the largest cluster
 * on the default type in the constructs' two subnets).
 */
function pinNodeGroupToParameters(
  cluster: RabbitMqCluster,
  parameters: { nodeCount: CfnParameter; instanceType: CfnParameter; subnetIds: CfnParameter },
) {
  const { nodeCount, instanceType, subnetIds } = parameters;
  // Built with the default type (its x86-64 check passes); the plan cluster's type comes from the InstanceType
  // parameter.
  (cluster.launchTemplate.node.defaultChild as ec2.CfnLaunchTemplate).addPropertyOverride(
    'LaunchTemplateData.InstanceType',
    instanceType.valueAsString,
  );
  const nodeGroup = cluster.autoScalingGroup.node.defaultChild as autoscaling.CfnAutoScalingGroup;
  nodeGroup.minSize = nodeCount.valueAsString;
  nodeGroup.maxSize = nodeCount.valueAsString;
  nodeGroup.desiredCapacity = nodeCount.valueAsString;
  nodeGroup.vpcZoneIdentifier = subnetIds.valueAsList;
  (cluster.loadBalancer.node.defaultChild as elbv2.CfnLoadBalancer).subnets = subnetIds.valueAsList;
  // CREATE_COMPLETE waits for a signal from each of the NodeCount nodes. A Ref in ResourceSignal.Count is a common
  // pattern (e.g. `Count: !Ref DesiredCapacity`) that cfn-lint accepts; AWS's reference does not say so explicitly
  // and it
  // has not been deployed from here. These stacks are created and deleted, never updated; the
  // rolling update policy still has to be valid for any NodeCount, so it keeps no minimum in service.
  nodeGroup.cfnOptions.creationPolicy = {
    ...nodeGroup.cfnOptions.creationPolicy,
    resourceSignal: { ...nodeGroup.cfnOptions.creationPolicy?.resourceSignal, count: nodeCount.valueAsNumber },
  };
  nodeGroup.cfnOptions.updatePolicy = {
    ...nodeGroup.cfnOptions.updatePolicy,
    autoScalingRollingUpdate: {
      ...nodeGroup.cfnOptions.updatePolicy?.autoScalingRollingUpdate,
      minInstancesInService: 0,
    },
  };
}

const clusterTemplateStackName = (release: RabbitMqRelease) => `Cluster${release.rabbitmqVersion.replace(/\./g, '')}`;

/**
 * Synthesizes buildClusterTemplateApp once (no assets inside: plain templates) and returns the folder of
 * clusterTemplateFileName files.
 */
export function synthesizeClusterTemplates(
  nodeImageParameterName: string = DEFAULT_CLUSTER_NODE_IMAGE_PARAMETER,
): string {
  const cached = templatesDirs.get(nodeImageParameterName);
  if (cached) return cached;
  const outdir = mkdtempSync(join(tmpdir(), 'rmqbench-cluster-templates-'));
  const dir = mkdtempSync(join(tmpdir(), 'rmqbench-cluster-template-files-'));
  const assembly = buildClusterTemplateApp(outdir, nodeImageParameterName).synth();
  for (const release of CONTROLLER_RELEASES) {
    const artifact = assembly.getStackByName(clusterTemplateStackName(release));
    writeFileSync(join(dir, clusterTemplateFileName(release)), readFileSync(join(outdir, artifact.templateFile)));
  }
  for (const brokers of KAFKA_CONTROLLER_BROKER_COUNTS) {
    const artifact = assembly.getStackByName(kafkaClusterTemplateStackName(brokers));
    writeFileSync(join(dir, kafkaClusterTemplateFileName(brokers)), readFileSync(join(outdir, artifact.templateFile)));
  }
  for (const nodes of NATS_CONTROLLER_NODE_COUNTS) {
    const artifact = assembly.getStackByName(natsClusterTemplateStackName(nodes));
    writeFileSync(join(dir, natsClusterTemplateFileName(nodes)), readFileSync(join(outdir, artifact.templateFile)));
  }
  // The cloud assembly was only a means to the template files; the files are an asset's source, which the app's synth
  // copies into its own cdk.out, so they are removed when the process exits (a `cdk synth` leaves nothing in /tmp).
  rmSync(outdir, { recursive: true, force: true });
  if (templatesDirs.size === 0)
    process.once('exit', () => {
      for (const made of templatesDirs.values()) rmSync(made, { recursive: true, force: true });
    });
  templatesDirs.set(nodeImageParameterName, dir);
  return dir;
}

function pascal(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_, __, letter: string) => letter.toUpperCase());
}

/**
 * The Elastic IPs of a VPC's NAT gateways, where the VPC is defined in this app (ec2.Vpc puts one under each public
 * subnet with a NAT).
 */
function natGatewayEips(vpc: ec2.IVpc): ec2.CfnEIP[] {
  return vpc.publicSubnets
    .map((subnet) => subnet.node.tryFindChild('EIP'))
    .filter((child): child is ec2.CfnEIP => child instanceof ec2.CfnEIP);
}

/**
 * A given VPC with azure: the functions that reach Azure clusters leave through the NAT gateway of whichever cluster
 * subnet they run in (one NAT per zone is common), and an Azure NSG admits only the addresses it is told. Where the VPC
 * is defined in this app, its NAT gateways' Elastic IPs are used, or checked against controllerEgressAddresses by
 * count;
 * an imported VPC's gateways cannot be seen at synthesis (the README says what to give).
 */
function checkGivenVpcEgress(vpc: ec2.IVpc, addresses: readonly string[] | undefined): void {
  const eips = natGatewayEips(vpc);
  if (!addresses?.length) {
    if (eips.length > 0) return;
    throw new Error(
      'controllerEgressAddresses is required with azure when vpc is given and its NAT gateways are not defined ' +
        'in this app: the public IPv4 addresses (the Elastic IP of the NAT gateway of every subnet the ' +
        "controller's in-VPC functions run in) Azure clusters admit",
    );
  }
  if (eips.length > addresses.length) {
    throw new Error(
      `controllerEgressAddresses has ${addresses.length} address(es) but the vpc has ${eips.length} NAT ` +
        `gateways: the in-VPC functions leave through the NAT gateway of their subnet's zone, so give the ` +
        `Elastic IP of each (or leave controllerEgressAddresses out to use them)`,
    );
  }
}

/**
 * KafkaCluster's brokers are found by name in a private hosted zone, which resolves only in a VPC with DNS support and
 * DNS host names (https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/hosted-zone-private-considerations.html).
 * Checked where the VPC is defined in this app; an imported VPC's settings cannot be seen at synthesis.
 */
function checkGivenVpcDns(vpc: ec2.IVpc): void {
  const cfnVpc = vpc.node.defaultChild;
  if (!(cfnVpc instanceof ec2.CfnVPC)) return;
  const off = (['enableDnsSupport', 'enableDnsHostnames'] as const).filter((setting) => cfnVpc[setting] === false);
  if (off.length > 0)
    throw new Error(
      `vpc must have ${off.join(' and ')} on: Kafka clusters' brokers are found by name in a private hosted ` +
        `zone, which resolves only with DNS support and DNS host names`,
    );
}
