import { DescribeInstanceTypesCommand, type _InstanceType, type EC2Client } from '@aws-sdk/client-ec2';
import { GetServiceQuotaCommand, type ServiceQuotasClient } from '@aws-sdk/client-service-quotas';
import type { Plan } from '../core/plan/plan';
import {
  isStandardInstanceType,
  launchedInstances,
  STANDARD_VCPU_QUOTA,
  vcpuNeed,
  vcpuQuotaProblem,
} from '../core/cloud/vcpu-quota';

/** What `run --target aws` learned of the account's vCPU quota: a line to print, or why it must not start. */
export interface VcpuQuotaOutcome {
  readonly note?: string;
  readonly problem?: string;
}

/** The error, and the permission the call needs when the error is a refusal. */
const described = (error: unknown, permission: string) => {
  const { name, message } = error as Error;
  return `${name}: ${message}${/AccessDenied|UnauthorizedOperation/.test(name) ? `; it needs ${permission}` : ''}`;
};

/**
 * Before `run --target aws` starts anything: the plan's peak Standard-group vCPUs (core/cloud/vcpu-quota.ts) against
 * the account's quota in the controller's region, read with the user's credentials: Service Quotas GetServiceQuota
 * (https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_GetServiceQuota.html, the applied value) and
 * EC2 DescribeInstanceTypes for each type's default vCPUs (VCpuInfo.DefaultVCpus,
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_VCpuInfo.html). A call that fails (no permission, no
 * such quota) leaves the run unchecked and says so; it never stops the run by itself.
 */
export async function checkVcpuQuota(
  plan: Plan,
  region: string,
  clients: { readonly ec2: EC2Client; readonly quotas: ServiceQuotasClient },
  concurrency: number,
): Promise<VcpuQuotaOutcome> {
  const launched = launchedInstances(plan);
  const types = [
    ...new Set(launched.flatMap(({ instances }) => instances.map(({ instanceType }) => instanceType))),
  ].filter(isStandardInstanceType);
  if (types.length === 0) return {};
  let quota: number | undefined;
  try {
    const answer = await clients.quotas.send(
      new GetServiceQuotaCommand({
        ServiceCode: STANDARD_VCPU_QUOTA.serviceCode,
        QuotaCode: STANDARD_VCPU_QUOTA.quotaCode,
      }),
    );
    quota = answer.Quota?.Value;
  } catch (error) {
    return {
      note: `the account's vCPU quota was not checked (${described(error, 'servicequotas:GetServiceQuota')})`,
    };
  }
  if (quota === undefined) return { note: "the account's vCPU quota was not checked (GetServiceQuota gave no value)" };
  const vcpus = new Map<string, number>();
  try {
    const answer = await clients.ec2.send(
      new DescribeInstanceTypesCommand({ InstanceTypes: types as _InstanceType[] }),
    );
    for (const type of answer.InstanceTypes ?? [])
      if (type.InstanceType && type.VCpuInfo?.DefaultVCpus) vcpus.set(type.InstanceType, type.VCpuInfo.DefaultVCpus);
  } catch (error) {
    return {
      note: `the account's vCPU quota was not checked (${described(error, 'ec2:DescribeInstanceTypes')})`,
    };
  }
  const need = vcpuNeed(launched, vcpus, concurrency);
  const problem = vcpuQuotaProblem(need, quota, region);
  if (problem) return { problem };
  const unknown = need.unknownTypes.length > 0 ? ` (${need.unknownTypes.join(', ')} not counted: no vCPU figure)` : '';
  return {
    note:
      `vCPU quota: the run holds up to ${need.peakVcpus} vCPUs of On-Demand Standard instances at once, of this ` +
      `account's ${quota} in ${region}${unknown}`,
  };
}
