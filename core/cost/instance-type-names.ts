import { deployableAzureVmSize } from './azure-vm-sizes';

/**
 * How instance types are named across the catalog, the templates and the AWS rules. Only dependency-free imports:
 * Lambda
 * handlers that only need a name (e.g. the Azure VM size of a launch) stay free of the plan model and zod.
 */

/**
 * The catalog's key for an instance type: AWS types as written, Azure sizes without `Standard_` (as the Retail Prices
 * API's armSkuName minus that prefix).
 */
export function catalogInstanceType(provider: 'aws' | 'azure', instanceType: string): string {
  if (provider !== 'azure') return instanceType;
  const size = deployableAzureVmSize(instanceType) ?? instanceType;
  return /^standard_/i.test(size) ? size.slice('Standard_'.length) : size;
}

/**
 * The VM size an Azure template takes (`Standard_F4s_v2`), from either spelling; a deployable size in the templates'
 * own case.
 */
export function azureVmSize(instanceType: string): string {
  return (
    deployableAzureVmSize(instanceType) ??
    (instanceType.startsWith('Standard_') ? instanceType : `Standard_${instanceType}`)
  );
}

/**
 * Whether an AWS instance type runs on an Arm (Graviton) processor. In an EC2 type name the family letters and the
 * generation digit are followed by attribute letters, where `g` means AWS Graviton
 * (https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html, "Additional capabilities": g);
 * `a1` is the first-generation Arm family, which predates that convention.
 */
export function isArmInstanceType(instanceType: string): boolean {
  const family = instanceType.toLowerCase().split('.')[0] ?? '';
  if (family === 'a1') return true;
  const attributes = /^[a-z]+\d+([a-z-]*)$/.exec(family)?.[1] ?? '';
  return attributes.includes('g');
}
