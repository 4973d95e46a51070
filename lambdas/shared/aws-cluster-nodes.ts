import { DescribeInstancesCommand, type EC2Client, type Filter, type Instance } from '@aws-sdk/client-ec2';
import type { CloudNode } from '../../core/failover/cloud-fault';
import { BROKER_COMPONENTS, NODE_NAME_TAG, type FaultBroker } from '../../core/failover/cloud-broker-fault';

// The run's RabbitMQ nodes on AWS with their RabbitMQ node names: the fault step picks its node among them, and
// IngestRepetition names the broker metrics by their instance ids. No plan model here: IngestRepetition loads it alone.

/**
 * The tag the cluster template puts on the node group, which propagates it to the nodes (cdk/BenchmarkController.ts
 * buildClusterTemplateApp); SendCommand is granted on instances with it only.
 */
export const NODE_COMPONENT = 'rabbitmq-node';

/**
 * The cluster stack's running nodes, oldest first (then by address), so that `fault.node: 1` names the same node on
 * every call. CloudFormation tags the group's instances with aws:cloudformation:stack-name
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-autoscaling-autoscalinggroup-tagproperty.html);
 * the load generator has that tag too, so the node group's rmqbench:component tag tells them apart.
 */
export async function clusterNodes(ec2: EC2Client, clusterId: string): Promise<CloudNode[]> {
  const found: { id: string; ip: string; launched: number }[] = [];
  for (const instance of await runningStackInstances(ec2, clusterId, [
    { Name: 'tag:rmqbench:component', Values: [NODE_COMPONENT] },
  ])) {
    if (instance.InstanceId && instance.PrivateIpAddress)
      found.push({
        id: instance.InstanceId,
        ip: instance.PrivateIpAddress,
        launched: instance.LaunchTime ? new Date(instance.LaunchTime).getTime() : 0,
      });
  }
  const ipOrder = (ip: string) => ip.split('.').reduce((sum, part) => sum * 256 + Number(part), 0);
  return found
    .sort((a, b) => a.launched - b.launched || ipOrder(a.ip) - ipOrder(b.ip))
    .map((node) => ({ id: node.id, nodeName: `rabbit@${node.ip}` }));
}

/**
 * The running nodes of the cluster stack's broker: RabbitMQ's (clusterNodes), or the Kafka brokers or NATS servers by
 * their rmqbench:component tag, in node-name order, each named by its rmqbench:node-name tag.
 */
export async function brokerNodes(ec2: EC2Client, clusterId: string, broker: FaultBroker): Promise<CloudNode[]> {
  if (broker === 'rabbitmq') return clusterNodes(ec2, clusterId);
  const instances = await runningStackInstances(ec2, clusterId, [
    { Name: 'tag:rmqbench:component', Values: [BROKER_COMPONENTS[broker]] },
  ]);
  const order = (name: string) => Number(name.replace(/^\D+-/, ''));
  return instances
    .flatMap((instance) => {
      const nodeName = instance.Tags?.find((tag) => tag.Key === NODE_NAME_TAG)?.Value;
      return instance.InstanceId && nodeName ? [{ id: instance.InstanceId, nodeName }] : [];
    })
    .sort((a, b) => order(a.nodeName) - order(b.nodeName));
}

/** The cluster stack's running instances that match `filters` too, every page of DescribeInstances. */
async function runningStackInstances(ec2: EC2Client, clusterId: string, filters: Filter[] = []): Promise<Instance[]> {
  const found: Instance[] = [];
  let token: string | undefined;
  do {
    const page = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: 'tag:aws:cloudformation:stack-name', Values: [clusterId] },
          ...filters,
          { Name: 'instance-state-name', Values: ['running'] },
        ],
        NextToken: token,
      }),
    );
    found.push(...(page.Reservations ?? []).flatMap((reservation) => reservation.Instances ?? []));
    token = page.NextToken;
  } while (token);
  return found;
}

/** An instance of a cluster stack and the role its CloudWatch agent reports, when its tags say it. */
export interface StackInstance {
  readonly instanceId: string;
  /** `load-generator`, `rabbitmq-node`, `kafka-broker` or `nats-server` (rmqbench:component), when tagged. */
  readonly component?: string;
}

/**
 * Every running instance of the cluster stack (nodes, brokers, load generators), by the aws:cloudformation:stack-name
 * tag CloudFormation puts on them, with their rmqbench:component tag where they have one.
 */
export async function clusterStackInstances(ec2: EC2Client, clusterId: string): Promise<StackInstance[]> {
  return (await runningStackInstances(ec2, clusterId)).flatMap((instance) => {
    if (!instance.InstanceId) return [];
    const component = instance.Tags?.find((tag) => tag.Key === 'rmqbench:component')?.Value;
    return [{ instanceId: instance.InstanceId, ...(component ? { component } : {}) }];
  });
}
