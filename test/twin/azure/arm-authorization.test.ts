import {
  armAction,
  faultPrincipalRefusal,
  VIRTUAL_MACHINE_CONTRIBUTOR,
  type RoleAssignment,
} from './arm-authorization';

const SUBSCRIPTION = '/subscriptions/00000000-0000-0000-0000-000000000052';
const GROUP = `${SUBSCRIPTION}/resourceGroups/rmqbench-run-1-c1`;
const PRINCIPAL = { clientId: 'client-f1', objectId: 'object-f0' };
const role = (id: string) => `${SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/${id}`;
/** What main.bicep's faultRunCommandAssignment makes: the role on the run's group for faultPrincipalId. */
const ASSIGNED: RoleAssignment[] = [
  { principalId: PRINCIPAL.objectId, roleDefinitionId: role(VIRTUAL_MACHINE_CONTRIBUTOR), scope: GROUP },
];
const vm = `${GROUP}/providers/Microsoft.Compute/virtualMachines/rmqbench-vmss_3f2a9c1d`;

describe("the twin's ARM authorizes the fault-only principal by the run's role assignments", () => {
  test('ARM actions from method and path', () => {
    expect(armAction('GET', `${GROUP}/providers/Microsoft.Compute/virtualMachines`)).toBe(
      'Microsoft.Compute/virtualMachines/read',
    );
    expect(armAction('PUT', `${vm}/runCommands/rmqbench-fault-1`)).toBe(
      'Microsoft.Compute/virtualMachines/runCommands/write',
    );
    expect(armAction('DELETE', `${vm}/runCommands/rmqbench-fault-1`)).toBe(
      'Microsoft.Compute/virtualMachines/runCommands/delete',
    );
    expect(armAction('PUT', `${GROUP}/providers/Microsoft.Resources/deployments/main`)).toBe(
      'Microsoft.Resources/deployments/write',
    );
    expect(armAction('GET', `${SUBSCRIPTION}/resourcegroups`)).toBe(
      'Microsoft.Resources/subscriptions/resourceGroups/read',
    );
  });

  test("in its run's group: the VM list and Run Commands are allowed", () => {
    const allowed = (method: string, path: string) => faultPrincipalRefusal(PRINCIPAL, method, path, ASSIGNED);
    expect(allowed('GET', `${GROUP}/providers/Microsoft.Compute/virtualMachines`)).toBeUndefined();
    expect(allowed('PUT', `${vm}/runCommands/rmqbench-fault-1`)).toBeUndefined();
    expect(allowed('GET', `${vm}/runCommands/rmqbench-fault-1`)).toBeUndefined();
    expect(allowed('DELETE', `${vm}/runCommands/rmqbench-fault-1`)).toBeUndefined();
  });

  test('refused, named by action and scope: another group, a deployment, no assignment, another role', () => {
    const other = `${SUBSCRIPTION}/resourceGroups/rmqbench-run-2-c1/providers/Microsoft.Compute/virtualMachines`;
    expect(faultPrincipalRefusal(PRINCIPAL, 'GET', other, ASSIGNED)).toBe(
      "The client 'client-f1' with object id 'object-f0' does not have authorization to perform action " +
        `'Microsoft.Compute/virtualMachines/read' over scope '${other}' or the scope is invalid. ` +
        'If access was recently granted, please refresh your credentials.',
    );
    expect(
      faultPrincipalRefusal(PRINCIPAL, 'PUT', `${GROUP}/providers/Microsoft.Resources/deployments/main`, ASSIGNED),
    ).toMatch(/perform action 'Microsoft\.Resources\/deployments\/write'/);
    expect(faultPrincipalRefusal(PRINCIPAL, 'DELETE', GROUP, ASSIGNED)).toMatch(
      /'Microsoft\.Resources\/subscriptions\/resourceGroups\/delete'/,
    );
    expect(faultPrincipalRefusal(PRINCIPAL, 'PUT', `${vm}/runCommands/x`, [])).toMatch(/runCommands\/write/);
    const reader = [{ ...ASSIGNED[0]!, roleDefinitionId: role('acdd72a7-3385-48ef-bd42-f606fba81ae7') }];
    expect(faultPrincipalRefusal(PRINCIPAL, 'PUT', `${vm}/runCommands/x`, reader)).toMatch(/runCommands\/write/);
    const someoneElse = [{ ...ASSIGNED[0]!, principalId: 'another-object' }];
    expect(faultPrincipalRefusal(PRINCIPAL, 'PUT', `${vm}/runCommands/x`, someoneElse)).toMatch(/runCommands\/write/);
  });
});
