import { catalogInstanceType } from './instance-type-names';

/**
 * The most a load generator can send or receive, per direction: what bounds the traffic of a workload whose plan sets
 * neither a publish rate nor fixed work, so that the per-GB parts of an estimate (load balancer, between zones) have a
 * ceiling instead of no price.
 */
export interface LineRate {
  readonly gbps: number;
  readonly source: string;
}

/**
 * The load generators the controller launches (DEFAULT_LOAD_GENERATOR_TYPE), by the catalog's key. AWS: "Instance
 * bandwidth specifications apply to both inbound and outbound traffic ... up to 10 Gbps for inbound traffic and,
 * simultaneously, up to 10 Gbps for outbound traffic"
 * (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-network-bandwidth.html); c5n.4xlarge's is "Up to
 * 25 Gigabit" (its burst; baseline 15,000 Mbps: aws/karpenter-provider-aws
 * pkg/providers/instancetype/zz_generated.bandwidth.go, generated from DescribeInstanceTypes), and the burst is the
 * ceiling. Azure: Standard_F16s_v2's "Max Bandwidth (Mbps)" is 12500, "the maximum aggregated bandwidth allocated per
 * VM type across all NICs, for all destinations" (MicrosoftDocs/azure-docs
 * articles/virtual-machines/sizes/compute-optimized/fsv2-series.md, Network tab).
 */
const LOAD_GENERATOR_LINE_RATES: Readonly<Record<'aws' | 'azure', Readonly<Record<string, LineRate>>>> = {
  aws: {
    'c5n.4xlarge': { gbps: 25, source: 'c5n.4xlarge: up to 25 Gbps each way, AWS EC2 instance network specifications' },
  },
  azure: {
    F16s_v2: { gbps: 12.5, source: 'F16s_v2: 12,500 Mbps, Microsoft Fsv2-series network specifications' },
  },
};

/** A load generator type's line rate, or undefined when rmqbench has none on record (the traffic stays unpriced). */
export function loadGeneratorLineRate(target: 'aws' | 'azure', instanceType: string): LineRate | undefined {
  return LOAD_GENERATOR_LINE_RATES[target][catalogInstanceType(target, instanceType)];
}

/** GB `generators` load generators can publish in `seconds` at their line rate. */
export function lineRateGb(rate: LineRate, generators: number, seconds: number): number {
  return (rate.gbps / 8) * generators * seconds;
}
