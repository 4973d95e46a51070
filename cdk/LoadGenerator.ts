import { Aws, CfnOutput, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { THESIS_LOAD_GENERATOR_INSTANCE_TYPE } from './instance-tiers';
import type { RabbitMqCluster } from './RabbitMqCluster';
import { nagResourceText } from './nag-finding';
import { loadGeneratorBootCommands } from './user-data/load-generator';
import { CHECKOV_REASON, skipCheckov } from './checkov';
import { addHostMetricsAgent } from './host-metrics-agent';
import { LOAD_GENERATOR_ROLE } from '../core/metrics/cloudwatch-host-metrics';

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
}

/**
 * An EC2 instance that runs PerfTest against a cluster: Java and a checksum-verified PerfTest at boot,
 * managed through SSM (no SSH), allowed to write results under one S3 prefix.
 */
export class LoadGenerator extends Construct {
  public readonly instance: ec2.Instance;
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

    this.role = this.createRole(props.resultsBucket, resultsPrefix);

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: 'rmqbench load generator: no ingress; egress to the cluster and Maven Central',
      allowAllOutbound: true,
    });

    const userData = ec2.UserData.forLinux();
    addHostMetricsAgent(userData, this.role, { clusterId: Aws.STACK_NAME, role: LOAD_GENERATOR_ROLE });
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'cloudwatch:PutMetricData supports no resource-level permissions; a cloudwatch:namespace condition ' +
        'limits it to the rmqbench namespace.',
    });
    userData.addCommands(
      ...loadGeneratorBootCommands({
        resultsBucketName: props.resultsBucket.bucketName,
        resultsPrefix,
        kafkaTools: props.kafkaTools ?? false,
      }),
    );

    this.instance = this.createInstance(props, userData);

    props.cluster?.allowClientsFrom(this.securityGroup);
    // Exactly the cluster's admin secret: GetSecretValue (and DescribeSecret) on its ARN, nothing else in Secrets
    // Manager.
    props.cluster?.adminSecret.grantRead(this.role);

    new CfnOutput(this, 'InstanceId', {
      value: this.instance.instanceId,
      description: 'Load generator instance (connect with SSM Session Manager)',
    });
  }

  /** The instance: IMDSv2 only, an encrypted root volume, the boot script as user data. */
  private createInstance(props: LoadGeneratorProps, userData: ec2.UserData): ec2.Instance {
    const instanceType = props.instanceType ?? THESIS_LOAD_GENERATOR_INSTANCE_TYPE;
    const instance = new ec2.Instance(this, 'Instance', {
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
