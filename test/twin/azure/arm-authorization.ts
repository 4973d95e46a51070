/**
 * Azure RBAC in the twin's ARM for the fault-only service principal (BenchmarkAzureProps.faultCredentialsSecret): that
 * principal holds no role of its own; each run's deployment gives it Virtual Machine Contributor on that run's resource
 * group only (bicep/main.bicep `faultPrincipalId`, faultRunCommandAssignment). The controller's principal is the
 * subscription's Contributor the README asks for, and is not checked here.
 *
 * Virtual Machine Contributor (built-in role 9980e02c-c2be-4d73-94e8-173b1dc7cf3c,
 * https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/compute#virtual-machine-contributor)
 * allows, among others, `Microsoft.Compute/virtualMachines/*` and `Microsoft.Resources/subscriptions/resourceGroups/
 * read`: the fault step's VM list, its managed Run Commands (create, read the instance view, delete) and nothing
 * else it does not need. A role assignment at a resource group's scope applies to the group and what it holds
 * ("Understand scope for Azure RBAC", https://learn.microsoft.com/azure/role-based-access-control/scope-overview).
 * A refusal is ARM's 403 AuthorizationFailed, with the message format of
 * https://learn.microsoft.com/azure/role-based-access-control/troubleshooting.
 */

/** The built-in role's id (the GUID at the end of its roleDefinitionId). */
export const VIRTUAL_MACHINE_CONTRIBUTOR = '9980e02c-c2be-4d73-94e8-173b1dc7cf3c';

/** Action prefixes Virtual Machine Contributor grants that the fault step can call (a subset of the role's). */
const GRANTED = ['microsoft.compute/virtualmachines/', 'microsoft.resources/subscriptions/resourcegroups/read'];

export interface RoleAssignment {
  readonly principalId: string;
  readonly roleDefinitionId: string;
  /** The scope it was made at (a resource group's id). */
  readonly scope: string;
}

/**
 * The ARM action a request needs: the resource type path of its URL (provider namespace, then each type segment) with
 * read, write or delete (POST: action).
 */
export function armAction(method: string, path: string): string {
  const segments = path.split('/').filter(Boolean);
  const verb = method === 'GET' ? 'read' : method === 'DELETE' ? 'delete' : method === 'POST' ? 'action' : 'write';
  const providers = segments.findIndex((segment) => segment.toLowerCase() === 'providers');
  if (providers < 0) {
    // /subscriptions/{id}/resourceGroups[/{name}]
    return `Microsoft.Resources/subscriptions${segments.length > 2 ? '/resourceGroups' : ''}/${verb}`;
  }
  const [namespace, ...rest] = segments.slice(providers + 1);
  const types = rest.filter((_segment, index) => index % 2 === 0);
  return [namespace, ...types, verb].join('/');
}

/** The resource group a path is in, lower-cased, or undefined (a subscription-level path). */
function groupScopeOf(path: string): string | undefined {
  return /^(\/subscriptions\/[^/]+\/resourcegroups\/[^/]+)/i.exec(path)?.[1]?.toLowerCase();
}

/**
 * Why ARM refuses `method path` to the fault principal (`objectId`, `clientId`), or undefined when one of the role
 * assignments allows it.
 */
export function faultPrincipalRefusal(
  principal: { readonly clientId: string; readonly objectId: string },
  method: string,
  path: string,
  assignments: readonly RoleAssignment[],
): string | undefined {
  const action = armAction(method, path);
  const scope = groupScopeOf(path);
  const granted =
    scope !== undefined &&
    GRANTED.some((prefix) => action.toLowerCase().startsWith(prefix)) &&
    assignments.some(
      (assignment) =>
        assignment.principalId === principal.objectId &&
        assignment.roleDefinitionId.toLowerCase().endsWith(`/${VIRTUAL_MACHINE_CONTRIBUTOR}`) &&
        scope === assignment.scope.toLowerCase(),
    );
  if (granted) return undefined;
  return (
    `The client '${principal.clientId}' with object id '${principal.objectId}' does not have authorization to ` +
    `perform action '${action}' over scope '${path}' or the scope is invalid. ` +
    'If access was recently granted, please refresh your credentials.'
  );
}
