/**
 * The VM sizes the Azure target deploys: the `@allowed` list of bicep/main.bicep clusterVmSize and loadGeneratorVmSize
 * (and of modules/cluster.bicep, kafka-cluster.bicep, loadgen.bicep vmSize; test/bicep/structure.test.ts keeps every
 * list
 * equal to this one). A size outside it would pass plan validation and then fail the ARM deployment, after the
 * resource group was created.
 *
 * Why these: every size supports accelerated networking, which the templates turn on by default. Dsv5 requires it
 * (https://learn.microsoft.com/azure/virtual-machines/dv5-dsv5-series, "Accelerated Networking: Required"), and so
 * does Esv5 (https://learn.microsoft.com/azure/virtual-machines/ev5-esv5-series: E4s_v5 is 4 vCPU / 32 GiB, the
 * current match of the thesis's chapter 4 A4m_v2, 4 vCPU / 32 GB); Fsv2
 * supports it, except that it is restricted on the 2-vCPU F2s_v2
 * (https://learn.microsoft.com/azure/virtual-machines/fsv2-series,
 * footnote 4), which is therefore not offered. The thesis's F4s/F8s/F16s (Fs series, v1) are retired-generation sizes
 * that the templates do not offer; their 2019 prices stay in the catalog as reference data only.
 * No imports: handlers that only name a size stay free of the plan model and zod.
 */
export const AZURE_VM_SIZES: readonly string[] = [
  'Standard_D2s_v5',
  'Standard_D4s_v5',
  'Standard_D8s_v5',
  'Standard_D16s_v5',
  'Standard_E4s_v5',
  'Standard_F4s_v2',
  'Standard_F8s_v2',
  'Standard_F16s_v2',
  'Standard_F32s_v2',
];

/**
 * Memory of each deployable size in GiB, as the size tables give it: Dsv5 "Memory: GiB" 8/16/32/64
 * (https://learn.microsoft.com/azure/virtual-machines/dv5-dsv5-series, Dsv5-series table), E4s_v5 32
 * (https://learn.microsoft.com/azure/virtual-machines/ev5-esv5-series, Esv5-series table) and Fsv2 8/16/32/64
 * (https://learn.microsoft.com/azure/virtual-machines/fsv2-series). Azure Monitor gives a VM's available memory only;
 * used memory is this minus that (core/metrics/azure-monitor-metrics.ts). test/core/azure-vm-sizes.test.ts keeps every
 * size
 * of AZURE_VM_SIZES in this table.
 */
export const AZURE_VM_MEMORY_GIB: Readonly<Record<string, number>> = {
  Standard_D2s_v5: 8,
  Standard_D4s_v5: 16,
  Standard_D8s_v5: 32,
  Standard_D16s_v5: 64,
  Standard_E4s_v5: 32,
  Standard_F4s_v2: 8,
  Standard_F8s_v2: 16,
  Standard_F16s_v2: 32,
  Standard_F32s_v2: 64,
};

/** The memory of a deployable size in bytes (GiB × 2^30), or undefined for a size the table does not hold. */
export function azureVmMemoryBytes(size: string): number | undefined {
  const deployable = deployableAzureVmSize(size);
  const gib = deployable === undefined ? undefined : AZURE_VM_MEMORY_GIB[deployable];
  return gib === undefined ? undefined : gib * 2 ** 30;
}

/**
 * The size as the templates spell it, or undefined when the Azure target does not deploy it (either spelling, any
 * case).
 */
export function deployableAzureVmSize(instanceType: string): string | undefined {
  const prefixed = /^standard_/i.test(instanceType) ? instanceType : `Standard_${instanceType}`;
  return AZURE_VM_SIZES.find((size) => size.toLowerCase() === prefixed.toLowerCase());
}
