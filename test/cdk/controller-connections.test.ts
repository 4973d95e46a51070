import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { BenchmarkController } from '../../cdk/BenchmarkController';
import { deploymentParameterValues, type AzureClusterConfig } from '../../lambdas/shared/azure-cluster';
import { isExpression, listFiles, literal, parseBicepFile, relativeToBicep, type BicepFile } from '../bicep/bicep-tree';

/**
 * Issue 22, blockers 1 and 2: every connection a controller function opens to a cluster, followed hop by hop through
 * what
 * a user's account receives: the function's placement and security group in the synthesized template (inside the VPC
 * its requests leave through its subnet's NAT gateway, whose Elastic IP the launcher passes to Azure; outside it, from
 * an AWS-owned address), the deployment parameters the launcher builds from that (lambdas/shared/azure-cluster.ts), and
 * the network security group and public load balancer that bicep/main.bicep deploys with them.
 */
interface Connection {
  readonly fn: string;
  readonly port: number;
  readonly why: string;
}

/**
 * What the functions open to an Azure RabbitMQ cluster (lambdas/check-cluster/azure.ts, lambdas/smoke-test/index.ts).
 */
const AZURE_CONNECTIONS: readonly Connection[] = [
  { fn: 'check-cluster', port: 15671, why: 'CheckClusterReady GETs /api/nodes on managementHttpsUrl' },
  { fn: 'smoke-test', port: 5671, why: 'SmokeTest publishes and consumes over amqpsEndpoint' },
  { fn: 'smoke-test', port: 15671, why: 'SmokeTest reads the cluster name from managementHttpsUrl' },
];

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
let resources: Resources;
const bicep = new Map<string, BicepFile>();

beforeAll(async () => {
  const templateFile = join(mkdtempSync(join(tmpdir(), 'rmqbench-arm-')), 'main.json');
  writeFileSync(
    templateFile,
    JSON.stringify({
      $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
      contentVersion: '1.0.0.0',
      resources: [],
    }),
  );
  const stack = new Stack(new App(), 'Connections', { env: { account: '123456789012', region: 'eu-west-1' } });
  const credentialsSecret = secretsmanager.Secret.fromSecretCompleteArn(
    stack,
    'Sp',
    'arn:aws:secretsmanager:eu-west-1:123456789012:secret:sp-AbCdEf',
  );
  new BenchmarkController(stack, 'Controller', {
    azure: { credentialsSecret, location: 'westeurope', templateFile, parameters: { rabbitmqAdminUsername: 'admin' } },
  });
  resources = Template.fromStack(stack).toJSON().Resources as Resources;
  for (const path of listFiles('.bicep')) bicep.set(relativeToBicep(path), await parseBicepFile(path));
}, 120_000);

const ref = (value: unknown): string | undefined =>
  (value as { Ref?: string }).Ref ?? (value as { 'Fn::GetAtt'?: string[] })['Fn::GetAtt']?.[0];
const functionNamed = (name: string) =>
  Object.values(resources).find(
    (resource) => resource.Type === 'AWS::Lambda::Function' && resource.Properties.Description === `rmqbench ${name}`,
  )!;

/** Where a function's requests to the internet leave from: the Elastic IPs of the NAT gateways its subnets route to. */
function sourceAddresses(fn: { Properties: Record<string, unknown> }): string[] | 'aws-owned' {
  const vpcConfig = fn.Properties.VpcConfig as { SubnetIds: unknown[] } | undefined;
  if (!vpcConfig) return 'aws-owned';
  return vpcConfig.SubnetIds.map((subnet) => {
    const association = Object.values(resources).find(
      (resource) =>
        resource.Type === 'AWS::EC2::SubnetRouteTableAssociation' && ref(resource.Properties.SubnetId) === ref(subnet),
    )!;
    const route = Object.values(resources).find(
      (resource) =>
        resource.Type === 'AWS::EC2::Route' &&
        ref(resource.Properties.RouteTableId) === ref(association.Properties.RouteTableId) &&
        resource.Properties.DestinationCidrBlock === '0.0.0.0/0',
    )!;
    const nat = resources[ref(route.Properties.NatGatewayId)!]!;
    return ref(nat.Properties.AllocationId)!;
  });
}

/**
 * The ports the function's security groups let out to any internet address (an Azure load balancer's public IP is known
 * only at run time).
 */
function internetEgressPorts(fn: { Properties: Record<string, unknown> }): number[] {
  const groups = (
    (fn.Properties.VpcConfig as { SecurityGroupIds?: unknown[] } | undefined)?.SecurityGroupIds ?? []
  ).map((group) => resources[ref(group)!]!);
  return groups.flatMap((group) =>
    (
      (group.Properties.SecurityGroupEgress as {
        IpProtocol: string;
        FromPort: number;
        ToPort: number;
        CidrIp?: string;
      }[]) ?? []
    )
      .filter((rule) => rule.IpProtocol === 'tcp' && rule.CidrIp === '0.0.0.0/0')
      .flatMap((rule) => Array.from({ length: rule.ToPort - rule.FromPort + 1 }, (_, index) => rule.FromPort + index))
      .filter((port) => port < 20_000),
  );
}

/** The addresses the launcher tells Azure (CONTROLLER_EGRESS_ADDRESSES), as the Elastic IPs they name. */
function launcherEgressEips(): string[] {
  const variable = (functionNamed('launch-cluster').Properties.Environment as { Variables: Record<string, unknown> })
    .Variables.CONTROLLER_EGRESS_ADDRESSES;
  const parts = (variable as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']?.[1] ?? [variable];
  return parts.map((part) => ref(part)!);
}

/**
 * main.bicep with a public load balancer: the ports its NSG opens to allowedSourceAddressPrefixes, and the ports the
 * load balancer forwards.
 */
function azureFrontDoor(): { nsgPorts: number[]; lbPorts: number[] } {
  const main = bicep.get('main.bicep')!;
  const cluster = bicep.get('modules/cluster.bicep')!;
  // main.bicep: allowedSourcePorts = publicLoadBalancer ? tlsClientPorts : ...; LaunchCluster deploys with
  // publicLoadBalancer true.
  const nsgPorts = (literal(main.variables.get('tlsClientPorts') as never) as string[]).map(Number);
  // modules/cluster.bicep: the public load balancer's rules loop over publicPorts = [amqpsPort, managementTlsPort].
  const publicPorts = literal(cluster.variables.get('publicPorts') as never) as unknown[];
  const lbPorts = publicPorts.map((port) =>
    isExpression(port as never)
      ? Number(literal(cluster.variables.get((port as { expression: string }).expression) as never))
      : Number(port),
  );
  return { nsgPorts, lbPorts };
}

/** Follows one connection; undefined when it gets through, else the hop that stops it. */
function blockedHop(connection: Connection): string | undefined {
  const fn = functionNamed(connection.fn);
  const sources = sourceAddresses(fn);
  if (sources === 'aws-owned')
    return (
      `${connection.fn} is not attached to the VPC: its requests leave from AWS-owned addresses, which the ` +
      `cluster's NSG does not admit`
    );
  if (!internetEgressPorts(fn).includes(connection.port))
    return `${connection.fn}'s security group does not let tcp ${connection.port} out to the internet`;
  // The launcher's addresses become the NSG's source prefixes, through the real deploymentParameterValues.
  const fakeIp = new Map(launcherEgressEips().map((eip, index) => [eip, `198.51.100.${index + 1}`]));
  const config = {
    parameters: { allowedSourceAddressPrefixes: ['203.0.113.0/28'] },
    controllerEgressAddresses: [...fakeIp.values()],
  } as unknown as AzureClusterConfig;
  const prefixes = deploymentParameterValues(config, 3, {}).allowedSourceAddressPrefixes as string[];
  const missing = sources.filter((eip) => !fakeIp.has(eip) || !prefixes.includes(`${fakeIp.get(eip)}/32`));
  if (missing.length > 0)
    return (
      `${connection.fn} leaves through NAT address(es) ${missing.join(', ')}, which the cluster's NSG does not ` +
      `admit (CONTROLLER_EGRESS_ADDRESSES)`
    );
  const { nsgPorts, lbPorts } = azureFrontDoor();
  if (!nsgPorts.includes(connection.port))
    return `the cluster's NSG does not open ${connection.port} to the allowed prefixes`;
  if (!lbPorts.includes(connection.port)) return `the public load balancer does not forward ${connection.port}`;
  return undefined;
}

describe('every connection a controller function opens to an Azure cluster gets through, hop by hop', () => {
  test.each(
    AZURE_CONNECTIONS.map((connection) => [connection.fn, connection.port, connection.why, connection] as const),
  )('%s → tcp %i (%s)', (_fn, _port, _why, connection) => {
    expect(blockedHop(connection)).toBeUndefined();
  });

  test(
    'the check can fail: a function outside the VPC, a port the load balancer does not forward, and a missing ' +
      'security-group rule are each named',
    () => {
      const outside = { fn: 'launch-cluster', port: 15671, why: 'not a cluster client' };
      expect(blockedHop(outside)).toMatch(
        /launch-cluster is not attached to the VPC: its requests leave from AWS-owned addresses/,
      );
      expect(blockedHop({ fn: 'smoke-test', port: 5672, why: 'plain AMQP' })).toMatch(
        /security group does not let tcp 5672 out to the internet/,
      );
      expect(azureFrontDoor()).toEqual({ nsgPorts: [5671, 15671], lbPorts: [5671, 15671] });
    },
  );
});
