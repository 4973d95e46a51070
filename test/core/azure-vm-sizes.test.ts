import { AZURE_VM_MEMORY_GIB, AZURE_VM_SIZES, azureVmMemoryBytes } from '../../core/cost/azure-vm-sizes';

describe('the memory of the deployable Azure VM sizes', () => {
  test(
    'every size the templates deploy has its memory (used memory on azure is that ' +
      "minus Azure Monitor's available memory), and the table holds no other size",
    () => {
      expect(AZURE_VM_SIZES.filter((size) => AZURE_VM_MEMORY_GIB[size] === undefined)).toEqual([]);
      expect(Object.keys(AZURE_VM_MEMORY_GIB).sort()).toEqual([...AZURE_VM_SIZES].sort());
    },
  );

  test('bytes are GiB × 2^30, in either spelling of the size; a size not deployed has none', () => {
    expect(azureVmMemoryBytes('Standard_D2s_v5')).toBe(8 * 2 ** 30);
    expect(azureVmMemoryBytes('f32s_v2')).toBe(64 * 2 ** 30);
    expect(azureVmMemoryBytes('Standard_E8s_v5')).toBeUndefined();
  });
});
