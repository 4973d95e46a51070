import { mockClient } from 'aws-sdk-client-mock';
import { DescribeInstanceTypesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { GetServiceQuotaCommand, ServiceQuotasClient } from '@aws-sdk/client-service-quotas';
import { validatePlan } from '../../core/plan/plan';
import { isStandardInstanceType, launchedInstances, vcpuNeed, vcpuQuotaProblem } from '../../core/cloud/vcpu-quota';
import { checkVcpuQuota } from '../../bin/vcpu-quota-check';

/**
 * Three clusters: 3 × m5.xlarge (4 vCPUs) with one c5n.4xlarge (16) load generator, 5 × r5.xlarge with two, and a
 * Kafka cluster.
 */
const plan = validatePlan(
  {
    name: 'quota',
    clusters: [
      { name: 'small', nodes: 3, instanceType: { aws: 'm5.xlarge', azure: 'Standard_D4s_v5' } },
      { name: 'large', nodes: 5, instanceType: 'r5.xlarge', loadGenerators: 2 },
      { name: 'kafka', broker: 'kafka', nodes: 3, instanceType: 'm5.large' },
    ],
    workloads: [
      { name: 'w', clusters: ['small', 'large'], durationSeconds: 60, producers: 2, consumers: 2, queues: 2 },
      { name: 'k', clusters: ['kafka'], durationSeconds: 60 },
    ],
  },
  'test',
);
const VCPUS = new Map([
  ['m5.xlarge', 4],
  ['r5.xlarge', 4],
  ['m5.large', 2],
  ['c5n.4xlarge', 16],
]);

describe('the On-Demand Standard vCPU quota before a cloud run', () => {
  test('Standard group: A, C, D, H, I, M, R, T, Z families, not Inf, DL, Trn, HPC, Mac or others', () => {
    for (const type of ['m5.xlarge', 'c5n.4xlarge', 'r5.xlarge', 't3.small', 'i4i.large', 'z1d.large', 'd3.xlarge'])
      expect(isStandardInstanceType(type)).toBe(true);
    for (const type of ['inf2.xlarge', 'dl1.24xlarge', 'trn1.2xlarge', 'hpc7g.4xlarge', 'p4d.24xlarge', 'g5.xlarge'])
      expect(isStandardInstanceType(type)).toBe(false);
  });

  test('each cluster with its nodes and load generators; the peak is the largest clusters run at once', () => {
    expect(launchedInstances(plan)).toEqual([
      {
        cluster: 'small',
        instances: [
          { instanceType: 'm5.xlarge', count: 3 },
          { instanceType: 'c5n.4xlarge', count: 1 },
        ],
      },
      {
        cluster: 'large',
        instances: [
          { instanceType: 'r5.xlarge', count: 5 },
          { instanceType: 'c5n.4xlarge', count: 2 },
        ],
      },
      {
        cluster: 'kafka',
        instances: [
          { instanceType: 'm5.large', count: 3 },
          { instanceType: 'c5n.4xlarge', count: 1 },
        ],
      },
    ]);
    // 12 + 16 = 28, 20 + 32 = 52, 6 + 16 = 22: one at a time 52, two 80, four (all) 102.
    expect(vcpuNeed(launchedInstances(plan), VCPUS, 1).peakVcpus).toBe(52);
    expect(vcpuNeed(launchedInstances(plan), VCPUS, 2).peakVcpus).toBe(80);
    expect(vcpuNeed(launchedInstances(plan), VCPUS, 4).peakVcpus).toBe(102);
    expect(vcpuNeed(launchedInstances(plan), new Map(), 4)).toMatchObject({
      peakVcpus: 0,
      unknownTypes: ['c5n.4xlarge', 'm5.large', 'm5.xlarge', 'r5.xlarge'],
    });
  });

  test('over the quota: the figures, the largest cluster and how to ask for more', () => {
    const need = vcpuNeed(launchedInstances(plan), VCPUS, 4);
    expect(vcpuQuotaProblem(need, 102, 'eu-west-1')).toBeUndefined();
    expect(vcpuQuotaProblem(need, 32, 'eu-west-1')).toBe(
      "the run holds up to 102 vCPUs of On-Demand Standard instances at once in eu-west-1, above this account's " +
        'quota of 32 (Service Quotas ec2 L-1216C47A, "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) ' +
        'instances"); its largest cluster, large, alone needs 52: request an increase (aws service-quotas ' +
        'request-service-quota-increase --service-code ec2 --quota-code L-1216C47A --desired-value 102 --region ' +
        'eu-west-1), or run fewer or smaller clusters; --skip-quota-check starts it anyway',
    );
  });

  describe('read with the SDK clients (transport scripted)', () => {
    const quotas = mockClient(ServiceQuotasClient);
    const ec2 = mockClient(EC2Client);
    const clients = {
      ec2: new EC2Client({ region: 'eu-west-1' }),
      quotas: new ServiceQuotasClient({ region: 'eu-west-1' }),
    };
    afterEach(() => {
      quotas.reset();
      ec2.reset();
    });
    const typesAnswer = {
      InstanceTypes: [...VCPUS].map(([InstanceType, DefaultVCpus]) => ({
        InstanceType: InstanceType as never,
        VCpuInfo: { DefaultVCpus },
      })),
    };

    test("a new account's 5 vCPUs: refused, naming the quota", async () => {
      quotas
        .on(GetServiceQuotaCommand, { ServiceCode: 'ec2', QuotaCode: 'L-1216C47A' })
        .resolves({ Quota: { Value: 5 } });
      ec2.on(DescribeInstanceTypesCommand).resolves(typesAnswer);
      const outcome = await checkVcpuQuota(plan, 'eu-west-1', clients, 4);
      expect(outcome.problem).toMatch(/up to 102 vCPUs .* quota of 5 \(Service Quotas ec2 L-1216C47A/);
    });

    test('enough: a note with the figures', async () => {
      quotas.on(GetServiceQuotaCommand).resolves({ Quota: { Value: 640 } });
      ec2.on(DescribeInstanceTypesCommand).resolves(typesAnswer);
      await expect(checkVcpuQuota(plan, 'eu-west-1', clients, 4)).resolves.toEqual({
        note:
          'vCPU quota: the run holds up to 102 vCPUs of On-Demand Standard instances at once, ' +
          "of this account's 640 in eu-west-1",
      });
    });

    test('no permission to read the quota: not checked, said so, never refused', async () => {
      const denied = Object.assign(new Error('User is not authorized to perform: servicequotas:GetServiceQuota'), {
        name: 'AccessDeniedException',
      });
      quotas.on(GetServiceQuotaCommand).rejects(denied);
      await expect(checkVcpuQuota(plan, 'eu-west-1', clients, 4)).resolves.toEqual({
        note:
          "the account's vCPU quota was not checked (AccessDeniedException: User is not authorized to perform: " +
          'servicequotas:GetServiceQuota; it needs servicequotas:GetServiceQuota)',
      });
    });
  });
});
