import { CloudFormationClient, DescribeStacksCommand, ListStacksCommand } from '@aws-sdk/client-cloudformation';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createStackToken, launchStack, type AwsClusterConfig } from '../../lambdas/shared/aws-launch';
import type { ScheduledCluster } from '../../state-machines/schedule';
import { motoClientConfig, startMoto, type Moto } from '../cloud/moto';
import { startCloudFormationProxy, type CloudFormationProxy } from './cloudformation-proxy';

/**
 * Issue 22, item 6, with the real SDK client: LaunchCluster's CreateStack carries a ClientRequestToken derived from the
 * run's cluster, and when CloudFormation accepted the request but its answer was lost, the SDK's retry sends the same
 * token and is recognised as the same request instead of failing with AlreadyExistsException. moto creates the stack;
 * the proxy in front of it (cloudformation-proxy.ts) drops the first answer and honours the token as CloudFormation
 * does.
 */
jest.setTimeout(120_000);
let moto: Moto;
let proxy: CloudFormationProxy;
let cfn: CloudFormationClient;

const TEMPLATE = JSON.stringify({
  Parameters: Object.fromEntries(
    [
      'ResultsBucketName',
      'VpcId',
      'PrivateSubnetIds',
      'AvailabilityZones',
      'SmokeTestSecurityGroupId',
      'NodeCount',
      'BrokerPolicies',
    ].map((name) => [name, { Type: 'String' }]),
  ),
  Resources: { Topic: { Type: 'AWS::SNS::Topic' } },
});
const config: AwsClusterConfig = {
  templateUrls: { '4.1.4': 'https://s3.amazonaws.com/rmqbench-templates/cluster.json' },
  defaultRabbitmqVersion: '4.1.4',
  cloudFormationRoleArn: 'arn:aws:iam::123456789012:role/cfn',
  resultsBucketName: 'raw',
  expiryHours: 12,
  launchTimeoutMinutes: 30,
  network: {
    vpcId: 'vpc-1',
    privateSubnetIds: ['subnet-a', 'subnet-b'],
    availabilityZones: ['us-east-1a', 'us-east-1b'],
    clientSecurityGroupId: 'sg-smoke',
  },
};
const cluster = (clusterId: string): ScheduledCluster => ({
  index: 0,
  clusterId,
  nodes: 1,
  topology: 'quorum',
  repetitions: [],
});
const spec = { nodes: 1, topology: { type: 'quorum' as const } };

beforeAll(async () => {
  moto = await startMoto();
  const s3 = new S3Client({ ...motoClientConfig(moto), forcePathStyle: true });
  await s3.send(new CreateBucketCommand({ Bucket: 'rmqbench-templates' }));
  await s3.send(new PutObjectCommand({ Bucket: 'rmqbench-templates', Key: 'cluster.json', Body: TEMPLATE }));
  s3.destroy();
  proxy = await startCloudFormationProxy(moto.endpoint);
  cfn = new CloudFormationClient({ ...motoClientConfig(moto), endpoint: proxy.endpoint });
});
afterAll(async () => {
  cfn?.destroy();
  await proxy?.stop();
  await moto?.stop();
});

describe('CreateStack and an SDK retry of a request CloudFormation accepted', () => {
  test(
    'the token (from the run and the cluster) is on the wire, ' +
      'the lost answer is retried with the same token, and one stack exists',
    async () => {
      proxy.loseFirstCreateResponse = true;
      await expect(launchStack(cfn, config, 'tok', cluster('rmqbench-tok-c1'), spec)).resolves.toMatchObject({
        clusterId: 'rmqbench-tok-c1',
      });
      const creates = proxy.requests.filter((request) => request.Action === 'CreateStack');
      // The first attempt reached moto (the stack exists) and its answer was lost: the SDK sent it again.
      const token = createStackToken('tok', 'rmqbench-tok-c1');
      expect(token).toMatch(/^rmqbench-tok-c1-[0-9a-f]{16}$/);
      expect(creates.map((request) => request.ClientRequestToken)).toEqual([token, token]);
      const stacks = (await cfn.send(new ListStacksCommand({}))).StackSummaries?.filter(
        (stack) => stack.StackName === 'rmqbench-tok-c1',
      );
      expect(stacks).toHaveLength(1);
      expect(
        (await cfn.send(new DescribeStacksCommand({ StackName: 'rmqbench-tok-c1' }))).Stacks?.[0]?.StackStatus,
      ).toBe('CREATE_COMPLETE');
    },
  );

  test(
    'another run whose cluster id is the same does not get ' + 'the existing stack as its own: AlreadyExistsException',
    async () => {
      proxy.loseFirstCreateResponse = false;
      await launchStack(cfn, config, '2025-01-01T00:00:00Z_p', cluster('rmqbench-T00-00-00Z-p-c1'), spec);
      await expect(
        launchStack(cfn, config, '2025-01-02T00:00:00Z_p', cluster('rmqbench-T00-00-00Z-p-c1'), spec),
      ).rejects.toMatchObject({ name: 'AlreadyExistsException' });
    },
  );
});
