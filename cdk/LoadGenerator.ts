import { CfnOutput, Fn, Tags, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { THESIS_LOAD_GENERATOR_INSTANCE_TYPE } from './instance-tiers';
import type { RabbitMqCluster } from './RabbitMqCluster';
import { nagResourceText } from './nag-finding';
import { loadGeneratorUserData } from './user-data/load-generator';
import type { GoArch } from './go-toolchain';
import { CHECKOV_REASON, skipCheckov } from './checkov';
import { allowHostMetrics } from './host-metrics-agent';
import { MAX_LOAD_GENERATORS } from '../core/loadgen/load-generator-count';

/** The tag that tells the instances of a LoadGenerator with `count` > 1 apart: "0" to "count - 1". */
export const LOAD_GENERATOR_INDEX_TAG = 'rmqbench:load-generator-index';

export interface LoadGeneratorProps {
  /** VPC of the cluster under test. */
  readonly vpc: ec2.IVpc;
  /**
   * Availability Zone to place the instance in (one of the cluster's).
   * @default - the zone of the VPC's first private subnet with egress
   */
  readonly availabilityZone?: string;
  /**
   * Instance type.
   * @default c5n.4xlarge (the thesis's load generator)
   */
  readonly instanceType?: ec2.InstanceType;
  /** Bucket the benchmark results are written to. */
  readonly resultsBucket: s3.IBucket;
  /**
   * Key prefix the instance may write under; it can write nowhere else in the bucket.
   * @default "results/"
   */
  readonly resultsPrefix?: string;
  /**
   * Cluster under test: when given, the load generator is allowed to reach its AMQP and management
   * ports (through the load balancer and on each node), and to read its admin secret (the controller's run
   * script reads the credentials on the instance, lambdas/start-repetition/logic.ts).
   * @default - no security group rule and no secret access; call cluster.allowClientsFrom(loadGenerator.securityGroup)
   */
  readonly cluster?: RabbitMqCluster;
  /**
   * Also install Kafka's performance tools: the pinned, checksum-verified Kafka jars (cdk/kafka-artifacts.ts) and the
   * `kafka-tool <main class>` wrapper the controller's Kafka run script calls. Allow it to reach a KafkaCluster with
   * `kafkaCluster.allowClientsFrom(loadGenerator.securityGroup)`.
   * @default false
   */
  readonly kafkaTools?: boolean;
  /**
   * Also install the Go toolchain (pinned, checksum-verified, cdk/go-toolchain.ts) with which the controller's NATS
   * scripts build rmqbench's NATS load client. Allow it to reach a NatsCluster with
   * `natsCluster.allowClientsFrom(loadGenerator.securityGroup)`.
   * @default false
   */
  readonly natsTools?: boolean;
  /**
   * How many identical load generators to launch, for a workload one machine cannot drive (issue 27). All share the
   * role, security group and results prefix, and are placed as one is (the requested zone, else the first private
   * subnet): generators in one zone see the cluster alike, so their per-second rates add up and their latencies
   * compare. With `count` > 1 each instance carries the tag `rmqbench:load-generator-index` ("0" to "count - 1"), by
   * which SSM Run Command can target one or all, and `LOAD_GENERATOR_INDEX`/`LOAD_GENERATOR_COUNT` in
   * /etc/rmqbench/load-generator.env, so that a run script writes under a key of its own; with 1 the template is
   * unchanged. At most 10, the plan's bound (MAX_LOAD_GENERATORS, core/loadgen/load-generator-count.ts): beyond it
   * the split leaves too few queues per generator and the instance quota, not the brokers, becomes the limit.
   * The controller's cluster template launches the plan cluster's `loadGenerators` this way (its LoadGeneratorCount,
   * cdk/cluster-template-load-generators.ts).
   * @default 1
   */
  readonly count?: number;
}

/**
 * An EC2 instance that runs PerfTest against a cluster: Java and a checksum-verified PerfTest at boot,
 * managed through SSM (no SSH), allowed to write results under one S3 prefix.
 */
export class LoadGenerator extends Construct {
  /** The first instance (index 0): the only one with `count` 1. */
  public readonly instance: ec2.Instance;
  /** Every instance, by index (the `rmqbench:load-generator-index` tag when `count` > 1). */
  public readonly instances: readonly ec2.Instance[];
  /** The instances' ids, by index: the targets of SSM Run Command (`InstanceIds`). */
  public readonly instanceIds: readonly string[];
  /** How many instances: the `count` prop. */
  public readonly count: number;
  public readonly role: iam.Role;
  /** Security group of the instance (no ingress). */
  public readonly securityGroup: ec2.SecurityGroup;
  /** The prefix results are written under, ending with "/". */
  public readonly resultsPrefix: string;

  constructor(scope: Construct, id: string, props: LoadGeneratorProps) {
    super(scope, id);
    const resultsPrefix = props.resultsPrefix ?? 'results/';
    if (!/^[A-Za-z0-9!_.*'()\-/]+\/$/.test(resultsPrefix) || resultsPrefix.startsWith('/')) {
      throw new Error(
        `resultsPrefix must be a relative S3 key prefix ending with "/", such as "results/", got "${resultsPrefix}"`,
      );
    }
    this.resultsPrefix = resultsPrefix;
    const count = props.count ?? 1;
    if (!Number.isInteger(count) || count < 1 || count > MAX_LOAD_GENERATORS) {
      throw new Error(`count must be an integer from 1 to ${MAX_LOAD_GENERATORS}, got ${count}`);
    }
    this.count = count;

    this.role = this.createRole(props.resultsBucket, resultsPrefix);

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: 'rmqbench load generator: no ingress; egress to the cluster and Maven Central',
      allowAllOutbound: true,
    });

    allowHostMetrics(this.role);
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'cloudwatch:PutMetricData supports no resource-level permissions; a cloudwatch:namespace condition ' +
        'limits it to the rmqbench namespace.',
    });

    // Index 0 keeps the construct id and user data of the single generator, so that count 1 synthesizes as before.
    this.instances = Array.from({ length: count }, (_, index) => {
      const instance = this.createInstance(
        props,
        this.bootUserData(props, resultsPrefix, count > 1 ? { index, count } : undefined),
        index === 0 ? 'Instance' : `Instance${index + 1}`,
      );
      if (count > 1) Tags.of(instance).add(LOAD_GENERATOR_INDEX_TAG, String(index));
      return instance;
    });
    this.instance = this.instances[0]!;
    this.instanceIds = this.instances.map((instance) => instance.instanceId);

    props.cluster?.allowClientsFrom(this.securityGroup);
    // Exactly the cluster's admin secret: GetSecretValue (and DescribeSecret) on its ARN, nothing else in Secrets
    // Manager.
    props.cluster?.adminSecret.grantRead(this.role);

    new CfnOutput(this, 'InstanceId', {
      value: this.instance.instanceId,
      description: 'Load generator instance (connect with SSM Session Manager)',
    });
    if (count > 1) {
      new CfnOutput(this, 'InstanceIds', {
        value: Fn.join(',', [...this.instanceIds]),
        description: 'Every load generator instance, comma-separated, by index (rmqbench:load-generator-index)',
      });
    }
  }

  /** The boot script: the host metrics agent first, then Java and the tools; `generator` when count > 1. */
  private bootUserData(
    props: LoadGeneratorProps,
    resultsPrefix: string,
    generator: { index: number; count: number } | undefined,
  ): ec2.UserData {
    return loadGeneratorUserData({
      resultsBucketName: props.resultsBucket.bucketName,
      resultsPrefix,
      kafkaTools: props.kafkaTools ?? false,
      ...(props.natsTools ? { natsTools: { arch: this.goArch(props) } } : {}),
      ...(generator ? { generator } : {}),
    });
  }

  /** The Go tarball's architecture for the instance type. */
  private goArch(props: LoadGeneratorProps): GoArch {
    const instanceType = props.instanceType ?? THESIS_LOAD_GENERATOR_INSTANCE_TYPE;
    return instanceType.architecture === ec2.InstanceArchitecture.ARM_64 ? 'arm64' : 'amd64';
  }

  /** The instance: IMDSv2 only, an encrypted root volume, the boot script as user data. */
  private createInstance(props: LoadGeneratorProps, userData: ec2.UserData, id: string): ec2.Instance {
    const instanceType = props.instanceType ?? THESIS_LOAD_GENERATOR_INSTANCE_TYPE;
    const instance = new ec2.Instance(this, id, {
      vpc: props.vpc,
      vpcSubnets: {
        subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS,
        ...(props.availabilityZone ? { availabilityZones: [props.availabilityZone] } : {}),
      },
      instanceType,
      machineImage: ec2.MachineImage.latestAmazonLinux2023({
        cpuType:
          instanceType.architecture === ec2.InstanceArchitecture.ARM_64
            ? ec2.AmazonLinuxCpuType.ARM_64
            : ec2.AmazonLinuxCpuType.X86_64,
      }),
      role: this.role,
      securityGroup: this.securityGroup,
      userData,
      userDataCausesReplacement: true,
      // Native MetadataOptions; requireImdsv2 would add a launch template with a fixed, account-wide name.
      httpTokens: ec2.HttpTokens.REQUIRED,
      httpPutResponseHopLimit: 1,
      detailedMonitoring: true,
      blockDevices: [
        {
          deviceName: '/dev/xvda',
          volume: ec2.BlockDeviceVolume.ebs(30, { volumeType: ec2.EbsDeviceVolumeType.GP3, encrypted: true }),
        },
      ],
    });
    skipCheckov(instance, [{ id: 'CKV_AWS_46', comment: CHECKOV_REASON.userDataWithoutSecrets }]);
    Validations.of(instance).acknowledge({
      id: 'AwsSolutions-EC29',
      reason: 'A disposable benchmark client deleted with its stack; termination protection would block that teardown.',
    });
    Validations.of(instance).acknowledge({
      id: 'AwsSolutions-EC26',
      reason:
        'The root volume is encrypted (asserted in test/cdk). cdk-nag 3.0.2 EC26 throws, and so reports, for ' +
        'an instance without a launch template in a stack that has one (the cluster).',
    });
    return instance;
  }

  /** The instance role: SSM management and writing (only) under the results prefix. */
  private createRole(resultsBucket: s3.IBucket, resultsPrefix: string): iam.Role {
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
      description:
        'rmqbench load generator: SSM management, writing results under one S3 prefix, host metrics to CloudWatch',
      managedPolicies: [iam.ManagedPolicy.fromAwsManagedPolicyName('AmazonSSMManagedInstanceCore')],
    });
    const resultObjects = resultsBucket.arnForObjects(`${resultsPrefix}*`);
    // Write-only, under the prefix: no read, list or delete anywhere in the bucket.
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'WriteResultsUnderPrefix',
        actions: ['s3:PutObject', 's3:AbortMultipartUpload'],
        resources: [resultObjects],
      }),
    );
    if (resultsBucket.encryptionKey) {
      resultsBucket.encryptionKey.grant(role, 'kms:GenerateDataKey', 'kms:Encrypt');
    }
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]',
      reason: 'AWS-maintained minimum policy for Session Manager access, which replaces SSH.',
    });
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagResourceText(this, resultObjects)}]`,
      reason:
        'The wildcard is the object keys under the results prefix of the one results bucket: writing new ' +
        'results is the purpose.',
    });
    return role;
  }
}
