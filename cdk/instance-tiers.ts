import * as ec2 from 'aws-cdk-lib/aws-ec2';

/**
 * The instance tiers the seed thesis benchmarked, as documented starting points for `instanceType`.
 * Any instance type works; these make a published result reproducible.
 */
export const RabbitMqInstanceTiers = {
  /** Low tier: general purpose, 2 vCPU / 8 GiB (the construct's default). */
  LOW: ec2.InstanceType.of(ec2.InstanceClass.M5A, ec2.InstanceSize.LARGE),
  /** High tier: memory optimised, 4 vCPU / 32 GiB. */
  HIGH: ec2.InstanceType.of(ec2.InstanceClass.R5, ec2.InstanceSize.XLARGE),
  /** Compute tier, 4 vCPU / 8 GiB. */
  COMPUTE_XLARGE: ec2.InstanceType.of(ec2.InstanceClass.C5, ec2.InstanceSize.XLARGE),
  /** Compute tier, 8 vCPU / 16 GiB. */
  COMPUTE_2XLARGE: ec2.InstanceType.of(ec2.InstanceClass.C5, ec2.InstanceSize.XLARGE2),
  /** Compute tier, 16 vCPU / 32 GiB. */
  COMPUTE_4XLARGE: ec2.InstanceType.of(ec2.InstanceClass.C5, ec2.InstanceSize.XLARGE4),
} as const;

/** The load generator instance type the thesis used: network optimised, 16 vCPU, up to 25 Gbit/s. */
export const THESIS_LOAD_GENERATOR_INSTANCE_TYPE = ec2.InstanceType.of(ec2.InstanceClass.C5N, ec2.InstanceSize.XLARGE4);
