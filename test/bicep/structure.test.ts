import { join } from 'node:path';
import type { Node } from 'web-tree-sitter';
import { AZURE_VM_SIZES } from '../../core/cost/azure-vm-sizes';
import {
  MINIMUM_SOURCE_PREFIX_LENGTH,
  WORLD_OPEN_SOURCE_NAMES,
  worldOpenReason,
} from '../../core/cloud/source-prefixes';
import { MAX_LOAD_GENERATORS } from '../../core/loadgen/load-generator-count';
import { AZURE_METRICS_OUTPUTS } from '../../lambdas/ingest-repetition/azure-metrics';
import type { BicepFile, BicepValue, ResourceDeclaration } from './bicep-tree';
import {
  BICEP_DIR,
  isExpression,
  listFiles,
  literal,
  parameterDependencies,
  parseBicepFile,
  propertyValues,
  relativeToBicep,
} from './bicep-tree';

type Json = Record<string, BicepValue>;
const asObject = (value: BicepValue | undefined): Json => value as Json;

const files = new Map<string, BicepFile>();
const file = (name: string): BicepFile => files.get(name) as BicepFile;

function resource(bicep: BicepFile, type: string): ResourceDeclaration {
  const found = bicep.resources.filter((candidate) => candidate.resourceType === type && !candidate.existing);
  expect(found).toHaveLength(1);
  return found[0] as ResourceDeclaration;
}

beforeAll(async () => {
  for (const path of listFiles('.bicep')) files.set(relativeToBicep(path), await parseBicepFile(path));
});

describe('every template follows the parameter and output conventions', () => {
  test('every parameter and output has a @description; module descriptions say Required./Optional.', () => {
    for (const [name, bicep] of files) {
      for (const param of bicep.params.values()) {
        const description = param.decorators.find((decorator) => decorator.startsWith('description('));
        expect({ file: name, param: param.name, description: description !== undefined }).toEqual({
          file: name,
          param: param.name,
          description: true,
        });
        const required = param.defaultValue === undefined;
        expect({
          file: name,
          param: param.name,
          prefix: description?.slice("description('".length, "description('".length + 9),
        }).toEqual({
          file: name,
          param: param.name,
          prefix: required ? 'Required.' : 'Optional.',
        });
      }
      for (const output of bicep.outputs.values()) {
        expect({
          file: name,
          output: output.name,
          described: output.decorators.some((decorator) => decorator.startsWith('description(')),
        }).toEqual({
          file: name,
          output: output.name,
          described: true,
        });
      }
    }
  });

  test('no parameter is a plain array or object: each has a user-defined type from types.bicep (AVM style)', () => {
    const untyped = [...files].flatMap(([name, bicep]) =>
      [...bicep.params.values()]
        .filter((param) => param.type === 'array' || param.type === 'object')
        .map((param) => `${name} ${param.name} ${param.type}`),
    );
    expect(untyped).toEqual([]);
    const typeOf = (name: string, param: string) => file(name).params.get(param)?.type;
    for (const name of [
      'main.bicep',
      'modules/cluster.bicep',
      'modules/kafka-cluster.bicep',
      'modules/nats-cluster.bicep',
    ]) {
      expect(typeOf(name, 'availabilityZones')).toBe('availabilityZoneType[]');
    }
    for (const name of files.keys()) if (name !== 'types.bicep') expect(typeOf(name, 'tags')).toBe('tagsType');
    expect(typeOf('main.bicep', 'allowedSourceAddressPrefixes')).toBe('string[]');
    expect(typeOf('modules/network.bicep', 'allowedSourcePorts')).toBe('string[]');
    expect(typeOf('modules/secrets.bicep', 'allowedSubnetResourceIds')).toBe('string[]');
  });

  test('types.bicep: every type is exported and described, and so is every property of an object type', () => {
    const types = file('types.bicep');
    const statements = types.tree.rootNode.namedChildren.filter((node): node is Node => node !== null);
    const declarations = statements.filter((node) => node.type === 'type_declaration');
    expect(declarations.map((node) => node.namedChildren[0]?.text)).toEqual([
      'availabilityZoneType',
      'tagsType',
      'natsSyncIntervalType',
    ]);
    for (const declaration of declarations) {
      const decorators = declaration.previousNamedSibling;
      expect(decorators?.type).toBe('decorators');
      expect(decorators?.text).toMatch(/@export\(\)\s+@description\('/);
      const value = declaration.namedChildren[1];
      if (value?.type !== 'object') continue;
      const members = value.namedChildren.filter((node): node is Node => node !== null);
      for (const [index, member] of members.entries()) {
        if (member.type !== 'object_property') continue;
        expect({ property: member.text, described: members[index - 1]?.text ?? '' }).toEqual({
          property: member.text,
          described: expect.stringMatching(/^@description\('(Required|Optional)\. /),
        });
      }
    }
    // The zones are the strings ARM takes in a resource's `zones`, never numbers.
    expect(declarations[0]?.namedChildren[1]?.text).toBe("'1' | '2' | '3'");
    // Each template imports what it uses from it, and only the types it exports.
    for (const [name, bicep] of files) {
      if (name === 'types.bicep') continue;
      const imports = bicep.tree.rootNode.namedChildren.filter((node) => node?.type === 'import_functionality');
      expect({ name, imports: imports.map((node) => node?.namedChildren.at(-1)?.text) }).toEqual({
        name,
        imports: [name.startsWith('modules/') ? "'../types.bicep'" : "'types.bicep'"],
      });
    }
  });

  test('every module outputs name and resourceId', () => {
    for (const [name, bicep] of files) {
      if (!name.startsWith('modules/')) continue;
      expect({ file: name, outputs: [...bicep.outputs.keys()] }).toEqual({
        file: name,
        outputs: expect.arrayContaining(['name', 'resourceId']),
      });
    }
  });

  test('main.bicep is resource-group scoped and outputs the endpoints and ids the controller needs', () => {
    expect(file('main.bicep').targetScope).toBe('resourceGroup');
    expect([...file('main.bicep').outputs.keys()]).toEqual(
      expect.arrayContaining(['amqpEndpoint', 'managementUrl', 'scaleSetResourceId', 'loadGeneratorResourceId']),
    );
    expect(
      file('main.bicep')
        .modules.map((module) => module.path)
        .sort(),
    ).toEqual(
      [
        'modules/cluster.bicep',
        'modules/kafka-cluster.bicep',
        'modules/loadgen.bicep',
        'modules/nats-cluster.bicep',
        'modules/network.bicep',
        'modules/secrets.bicep',
      ].sort(),
    );
  });

  test(
    'host metrics need no agent: IngestRepetition reads Azure Monitor platform metrics of the resources ' +
      'whose ids main.bicep outputs (the scale set per VM, each Kafka broker VM, the load generator VM)',
    () => {
      // Platform metrics ("Percentage CPU", "Available Memory Bytes", "Disk Write Bytes", "Network In/Out Total") exist
      // for
      // every VM and scale set without an agent or data collection rule; what the fetch needs is the resource ids
      // (AZURE_METRICS_OUTPUTS).
      const main = file('main.bicep');
      expect(AZURE_METRICS_OUTPUTS.filter((name) => !main.outputs.has(name))).toEqual([]);
      // The scale set exists with broker = 'rabbitmq' (the default); with 'kafka' its id is empty (the brokers are VMs
      // of their own).
      expect(main.outputs.get('scaleSetResourceId')?.value.text).toBe(
        "broker == 'rabbitmq' ? cluster.outputs.resourceId : ''",
      );
      // With 'kafka' every broker VM's id, from the module's loop over the same VM resources; an empty array with
      // 'rabbitmq'.
      const kafkaOutput = main.outputs.get('kafkaBrokerResourceIds');
      expect(kafkaOutput?.type).toBe('array');
      expect(kafkaOutput?.value.text).toBe("broker == 'kafka' ? kafkaCluster.outputs.brokerResourceIds : []");
      const kafkaCluster = file('modules/kafka-cluster.bicep');
      const brokers = resource(kafkaCluster, 'Microsoft.Compute/virtualMachines');
      expect(kafkaCluster.outputs.get('brokerResourceIds')?.value.text.replace(/\s+/g, ' ')).toBe(
        `[ for i in range(0, brokerCount): ${brokers.name}[i].id ]`,
      );
      expect(brokers.node.text).toMatch(/= \[\s*for i in range\(0, brokerCount\):/);
      // The VM sizes whose memory turns "Available Memory Bytes" into used memory: the sizes the VMs are deployed with.
      expect(main.outputs.get('clusterVmSize')?.value.text).toBe('clusterVmSize');
      expect(main.outputs.get('loadGeneratorVmSize')?.value.text).toBe('loadGeneratorVmSize');
      const vmSizeOf = (path: string) =>
        asObject(asObject(literal(main.modules.find((candidate) => candidate.path === path)?.body as never)).params)
          .vmSize;
      expect([
        vmSizeOf('modules/cluster.bicep'),
        vmSizeOf('modules/kafka-cluster.bicep'),
        vmSizeOf('modules/loadgen.bicep'),
      ]).toEqual([
        { expression: 'clusterVmSize' },
        { expression: 'clusterVmSize' },
        { expression: 'loadGeneratorVmSize' },
      ]);
      expect(file('modules/cluster.bicep').outputs.get('resourceId')?.value.text).toBe(
        `${resource(file('modules/cluster.bicep'), 'Microsoft.Compute/virtualMachineScaleSets').name}.id`,
      );
      expect(main.outputs.get('loadGeneratorResourceId')?.value.text).toBe('loadGenerator.outputs.resourceId');
      // The load generators are a loop over loadGeneratorCount VMs (issue 27): resourceId is the first's, and
      // loadGeneratorResourceIds every one's, from the module's loop over the same VM resources.
      const loadgen = file('modules/loadgen.bicep');
      const generators = resource(loadgen, 'Microsoft.Compute/virtualMachines');
      expect(generators.node.text).toMatch(/= \[\s*for i in range\(0, loadGeneratorCount\):/);
      expect(loadgen.outputs.get('resourceId')?.value.text).toBe(`${generators.name}[0].id`);
      expect(loadgen.outputs.get('loadGeneratorVmIds')?.value.text).toBe(
        `[for i in range(0, loadGeneratorCount): ${generators.name}[i].id]`,
      );
      expect(main.outputs.get('loadGeneratorResourceIds')?.value.text).toBe('loadGenerator.outputs.loadGeneratorVmIds');
      const loadgenParams = asObject(
        asObject(literal(main.modules.find((candidate) => candidate.path === 'modules/loadgen.bicep')?.body as never))
          .params,
      );
      expect(loadgenParams.loadGeneratorCount).toEqual({ expression: 'loadGeneratorCount' });
      for (const name of ['main.bicep', 'modules/loadgen.bicep']) {
        const count = file(name).params.get('loadGeneratorCount');
        expect({ name, type: count?.type, default: count?.defaultValue?.text, decorators: count?.decorators }).toEqual({
          name,
          type: 'int',
          default: '1',
          decorators: expect.arrayContaining(['minValue(1)', `maxValue(${MAX_LOAD_GENERATORS})`]),
        });
      }
    },
  );

  test('declarations come in STYLE.md order: targetScope, parameters, variables, resources/modules, outputs', () => {
    const rank: Record<string, number> = {
      target_scope_assignment: 0,
      parameter_declaration: 1,
      variable_declaration: 2,
      resource_declaration: 3,
      module_declaration: 3,
      output_declaration: 4,
      type_declaration: 5,
    };
    for (const [name, bicep] of files) {
      const ranks = bicep.order.filter((kind) => kind in rank).map((kind) => rank[kind] as number);
      expect({ file: name, ranks }).toEqual({ file: name, ranks: [...ranks].sort((a, b) => a - b) });
    }
  });
});

describe('secrets', () => {
  test(
    'the Erlang cookie and the admin password are @secure() parameters whose ' +
      'only default is the empty string (refused for RabbitMQ, see below)',
    () => {
      for (const [name, param] of [
        ['main.bicep', 'erlangCookie'],
        ['main.bicep', 'rabbitmqAdminPassword'],
        ['modules/secrets.bicep', 'erlangCookie'],
        ['modules/secrets.bicep', 'rabbitmqAdminPassword'],
      ] as const) {
        const declaration = file(name).params.get(param);
        expect(declaration?.decorators).toContain('secure()');
        // The one hard-coded default the secure-parameter-default linter rule accepts besides newGuid().
        expect(declaration?.defaultValue?.text).toBe("''");
      }
    },
  );

  test(
    'the vault gets the Erlang cookie and admin password secrets only for RabbitMQ: main.bicep passes ' +
      'its checked broker flag, the module conditions both secrets and empties their name outputs',
    () => {
      const secrets = file('modules/secrets.bicep');
      for (const name of ['erlangCookieSecret', 'adminPasswordSecret']) {
        const declaration = secrets.resources.find((candidate) => candidate.name === name);
        expect(declaration?.resourceType).toBe('Microsoft.KeyVault/vaults/secrets');
        expect(declaration?.node.text).toContain('= if (rabbitmqSecretsEnabled) {');
      }
      expect(secrets.params.get('rabbitmqSecretsEnabled')?.defaultValue?.text).toBe('true');
      expect(secrets.outputs.get('erlangCookieSecretName')?.value.text).toBe(
        "rabbitmqSecretsEnabled ? erlangCookieSecretName : ''",
      );
      expect(secrets.outputs.get('adminPasswordSecretName')?.value.text).toBe(
        "rabbitmqSecretsEnabled ? adminPasswordSecretName : ''",
      );
      const main = file('main.bicep');
      const params = asObject(
        asObject(literal(main.modules.find((module) => module.path === 'modules/secrets.bicep')?.body as never)).params,
      );
      expect(params.rabbitmqSecretsEnabled).toEqual({ expression: 'rabbitmqSecretsChecked' });
    },
  );

  test('no @secure() parameter flows into customData or an output', () => {
    let customDataSeen = 0;
    for (const [name, bicep] of files) {
      const secure = [...bicep.params.values()]
        .filter((param) => param.decorators.includes('secure()'))
        .map((param) => param.name);
      for (const output of bicep.outputs.values()) {
        const leaked = [...parameterDependencies(bicep, output.value)].filter((param) => secure.includes(param));
        expect({ file: name, output: output.name, leaked }).toEqual({ file: name, output: output.name, leaked: [] });
      }
      for (const resourceDeclaration of bicep.resources) {
        for (const customData of propertyValues(resourceDeclaration.body, 'customData')) {
          customDataSeen++;
          const leaked = [...parameterDependencies(bicep, customData)].filter((param) => secure.includes(param));
          expect({ file: name, resource: resourceDeclaration.name, leaked }).toEqual({
            file: name,
            resource: resourceDeclaration.name,
            leaked: [],
          });
        }
      }
    }
    // The RabbitMQ scale set, the load generator, the Kafka brokers and the NATS servers.
    expect(customDataSeen).toBe(4);
  });

  test(
    'secure values passed to a module land in @secure() ' + 'module parameters, and only the secrets module gets them',
    () => {
      const main = file('main.bicep');
      const secure = [...main.params.values()]
        .filter((param) => param.decorators.includes('secure()'))
        .map((param) => param.name);
      for (const module of main.modules) {
        const target = file(module.path);
        const params = asObject(asObject(literal(module.body)).params);
        for (const [key, value] of Object.entries(params)) {
          if (!isExpression(value) || !secure.includes(value.expression)) continue;
          expect({
            module: module.path,
            param: key,
            secure: target.params.get(key)?.decorators.includes('secure()'),
          }).toEqual({
            module: module.path,
            param: key,
            secure: true,
          });
          expect(module.path).toBe('modules/secrets.bicep');
        }
      }
    },
  );

  test('the nodes read the secrets from Key Vault through a role assignment made before the scale set', () => {
    const cluster = file('modules/cluster.bicep');
    const assignments = cluster.resources.filter(
      (candidate) => candidate.resourceType === 'Microsoft.Authorization/roleAssignments',
    );
    const roles = assignments.map((assignment) => asObject(literal(assignment.body)));
    // Key Vault Secrets User, scoped to the vault.
    expect(roles).toContainEqual(expect.objectContaining({ scope: { expression: 'keyVault' } }));
    expect(cluster.variables.get('keyVaultSecretsUserRoleId')?.text).toBe("'4633458b-17de-408a-b874-0445c86b69e6'");
    const scaleSet = asObject(literal(resource(cluster, 'Microsoft.Compute/virtualMachineScaleSets').body));
    // The role assignments, and the load balancers whose pools the NIC names by resourceId() (no implicit dependency).
    expect(scaleSet.dependsOn).toEqual([
      ...assignments.map((assignment) => ({ expression: assignment.name })),
      { expression: 'loadBalancer' },
      { expression: 'publicLoadBalancerResource' },
    ]);
    const vault = asObject(
      asObject(literal(resource(file('modules/secrets.bicep'), 'Microsoft.KeyVault/vaults').body)).properties,
    );
    expect(vault.enableRbacAuthorization).toBe(true);
    expect(asObject(vault.networkAcls).defaultAction).toBe('Deny');
  });

  test(
    'the load generator reads the admin password from the vault: Key Vault ' +
      'Secrets User for its identity, scoped to the vault, made before the VM',
    () => {
      const loadgen = file('modules/loadgen.bicep');
      expect(loadgen.variables.get('keyVaultSecretsUserRoleId')?.text).toBe("'4633458b-17de-408a-b874-0445c86b69e6'");
      const vaults = loadgen.resources.filter(
        (candidate) => candidate.resourceType === 'Microsoft.KeyVault/vaults' && candidate.existing,
      );
      expect(vaults.map((vault) => asObject(literal(vault.body)).name)).toEqual([{ expression: 'keyVaultName' }]);
      const assignments = loadgen.resources.filter(
        (candidate) => candidate.resourceType === 'Microsoft.Authorization/roleAssignments',
      );
      const onVault = assignments.filter(
        (assignment) =>
          isExpression(asObject(literal(assignment.body)).scope) &&
          (asObject(literal(assignment.body)).scope as { expression: string }).expression === vaults[0]?.name,
      );
      expect(onVault).toHaveLength(1);
      const properties = asObject(asObject(literal(onVault[0]?.body as never)).properties);
      expect(properties).toMatchObject({
        roleDefinitionId: {
          expression: "subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUserRoleId)",
        },
        principalId: { expression: 'identity.properties.principalId' },
        principalType: 'ServicePrincipal',
      });
      expect(resource(loadgen, 'Microsoft.ManagedIdentity/userAssignedIdentities').name).toBe('identity');
      expect(asObject(literal(resource(loadgen, 'Microsoft.Compute/virtualMachines').body)).dependsOn).toEqual([
        { expression: onVault[0]?.name },
      ]);
      expect(loadgen.params.get('keyVaultName')?.defaultValue).toBeUndefined();
    },
  );

  test(
    'a fault-only principal (faultPrincipalId) gets Virtual Machine ' +
      "Contributor on the run's resource group only, and only when given",
    () => {
      const main = file('main.bicep');
      expect(main.params.get('faultPrincipalId')?.defaultValue?.text).toBe("''");
      const assignments = main.resources.filter(
        (candidate) => candidate.resourceType === 'Microsoft.Authorization/roleAssignments',
      );
      expect(assignments.map((assignment) => assignment.typeWithVersion)).toEqual([
        'Microsoft.Authorization/roleAssignments@2022-04-01',
      ]);
      const assignment = assignments[0] as ResourceDeclaration;
      // Conditional on the parameter: without it, no assignment and nothing else changes.
      const condition = assignment.node.namedChildren.find((child) => child?.type === 'if_statement')?.namedChildren[0]
        ?.text;
      expect(condition).toBe('(!empty(faultPrincipalId))');
      const body = asObject(literal(assignment.body));
      // No scope: the deployment's resource group (a scale-set scope would not reach a Flexible scale set's VMs).
      expect(body.scope).toBeUndefined();
      expect(body.name).toEqual({
        expression: 'guid(resourceGroup().id, faultPrincipalId, virtualMachineContributorRoleId)',
      });
      expect(main.variables.get('virtualMachineContributorRoleId')?.text).toBe(
        "'9980e02c-c2be-4d73-94e8-173b1dc7cf3c'",
      );
      expect(asObject(body.properties)).toMatchObject({
        roleDefinitionId: {
          expression:
            "subscriptionResourceId('Microsoft.Authorization/roleDefinitions', virtualMachineContributorRoleId)",
        },
        principalId: { expression: 'faultPrincipalId' },
        principalType: 'ServicePrincipal',
      });
    },
  );

  test('main.bicep gives the load generator the vault and lets its subnet through the vault firewall', () => {
    const main = file('main.bicep');
    const moduleParams = (path: string) =>
      asObject(asObject(literal(main.modules.find((candidate) => candidate.path === path)?.body as never)).params);
    expect(moduleParams('modules/loadgen.bicep').keyVaultName).toEqual({ expression: 'secrets.outputs.name' });
    expect(moduleParams('modules/secrets.bicep').allowedSubnetResourceIds).toEqual([
      { expression: 'network.outputs.clusterSubnetResourceId' },
      { expression: 'network.outputs.loadGeneratorSubnetResourceId' },
    ]);
    const network = asObject(
      literal(resource(file('modules/network.bicep'), 'Microsoft.Network/virtualNetworks').body),
    );
    const subnets = asObject(network.properties).subnets as Json[];
    for (const subnet of subnets) {
      const endpoints = (asObject(subnet.properties).serviceEndpoints as Json[]).map((endpoint) => endpoint.service);
      expect({ subnet: subnet.name, endpoints }).toEqual({
        subnet: subnet.name,
        endpoints: expect.arrayContaining(['Microsoft.KeyVault']),
      });
    }
    expect(subnets.map((subnet) => subnet.name)).toEqual(['cluster', 'loadgen']);
  });

  test('main.bicep outputs where the load generator reads the password (names and client id, never the value)', () => {
    const main = file('main.bicep');
    expect(main.outputs.get('keyVaultName')?.value.text).toBe('secrets.outputs.name');
    expect(main.outputs.get('adminPasswordSecretName')?.value.text).toBe('secrets.outputs.adminPasswordSecretName');
    expect(main.outputs.get('loadGeneratorIdentityClientId')?.value.text).toBe(
      'loadGenerator.outputs.identityClientId',
    );
    expect(file('modules/loadgen.bicep').outputs.get('identityClientId')?.value.text).toBe(
      'identity.properties.clientId',
    );
    expect(file('modules/secrets.bicep').outputs.get('adminPasswordSecretName')?.value.text).toBe(
      "rabbitmqSecretsEnabled ? adminPasswordSecretName : ''",
    );
  });
});

describe('network security group', () => {
  const rules = (): Json[] => {
    const nsg = asObject(
      literal(resource(file('modules/network.bicep'), 'Microsoft.Network/networkSecurityGroups').body),
    );
    return (asObject(nsg.properties).securityRules as Json[]).map((rule): Json => ({
      name: rule.name ?? null,
      ...asObject(rule.properties),
    }));
  };
  const ports = (rule: Json): string[] => {
    if (rule.destinationPortRange !== undefined)
      return [
        String(
          isExpression(rule.destinationPortRange) ? rule.destinationPortRange.expression : rule.destinationPortRange,
        ),
      ];
    const network = file('modules/network.bicep');
    const ranges = rule.destinationPortRanges;
    // A variable, or a parameter (its default).
    if (isExpression(ranges))
      return literal(
        (network.variables.get(ranges.expression) ?? network.params.get(ranges.expression)?.defaultValue) as never,
      ) as string[];
    return ranges as string[];
  };
  const inboundAllows = (): Json[] => rules().filter((rule) => rule.direction === 'Inbound' && rule.access === 'Allow');

  test(
    'client ports are allowed from the allowedSourceAddressPrefixes parameter ' +
      '(only allowedSourcePorts) and from the load-generator subnet, nowhere else',
    () => {
      const clientPorts = ['5672', '5671', '15672', '15671', '4222'];
      const clientRules = inboundAllows().filter(
        (rule) =>
          isExpression(rule.destinationPortRanges) &&
          ['allowedSourcePorts', 'clientPorts'].includes(rule.destinationPortRanges.expression),
      );
      expect(clientRules.map((rule) => rule.name)).toEqual([
        'AllowClientPortsFromAllowedSources',
        'AllowClientPortsFromLoadGenerator',
      ]);
      expect(clientRules[0]).toMatchObject({
        sourceAddressPrefixes: { expression: 'allowedSourceAddressPrefixes' },
        destinationPortRanges: { expression: 'allowedSourcePorts' },
      });
      expect(clientRules[1]).toMatchObject({
        sourceAddressPrefix: { expression: 'loadGeneratorSubnetPrefix' },
        destinationPortRanges: { expression: 'clientPorts' },
      });
      expect(ports(clientRules[1] as Json).sort()).toEqual([...clientPorts].sort());
      // No other allow rule opens a client port.
      const others = inboundAllows().filter(
        (rule) =>
          !clientRules.includes(rule) &&
          !isExpression(rule.destinationPortRanges) &&
          ports(rule).some((port) => clientPorts.includes(port)),
      );
      expect(others).toEqual([]);
      // The default of allowedSourcePorts is the TLS listeners only.
      expect(literal(file('modules/network.bicep').params.get('allowedSourcePorts')?.defaultValue as never)).toEqual([
        '5671',
        '15671',
      ]);
      for (const name of ['modules/network.bicep', 'main.bicep']) {
        const param = file(name).params.get('allowedSourceAddressPrefixes');
        expect(param?.defaultValue).toBeUndefined();
        expect(param?.decorators).toContain('minLength(1)');
      }
    },
  );

  test(
    'main.bicep opens only AMQPS 5671 and HTTPS 15671 to ' + 'the allowed sources when the load balancer is public',
    () => {
      const main = file('main.bicep');
      const network = asObject(
        asObject(literal(main.modules.find((module) => module.path === 'modules/network.bicep')?.body as never)).params,
      );
      expect(network.allowedSourcePorts).toEqual({
        expression:
          'publicLoadBalancer ? tlsClientPorts : tlsEnabled ? ' +
          'concat(plainClientPorts, tlsClientPorts) : plainClientPorts',
      });
      expect(literal(main.variables.get('tlsClientPorts') as never)).toEqual(['5671', '15671']);
      expect(literal(main.variables.get('plainClientPorts') as never)).toEqual(['5672', '15672']);
      // The prefixes reach the NSG only through the world-open check.
      expect(network.allowedSourceAddressPrefixes).toEqual({ expression: 'checkedSourcePrefixes' });
    },
  );

  test(
    'main.bicep refuses world-open source prefixes with ' + 'fail(), by the same rule as core/cloud/source-prefixes.ts',
    () => {
      const main = file('main.bicep');
      expect(literal(main.variables.get('worldOpenSourceNames') as never)).toEqual([...WORLD_OPEN_SOURCE_NAMES]);
      expect(literal(main.variables.get('minimumSourcePrefixLength') as never)).toBe(MINIMUM_SOURCE_PREFIX_LENGTH);
      const filter = main.variables.get('worldOpenSourcePrefixes')?.text ?? '';
      expect(filter).toMatch(/^filter\(\s*allowedSourceAddressPrefixes,/);
      for (const part of [
        'contains(worldOpenSourceNames, toLower(trim(prefix)))',
        "startsWith(toLower(trim(prefix)), 'azurecloud.')",
        '< minimumSourcePrefixLength',
      ])
        expect(filter).toContain(part);
      const checked = main.variables.get('checkedSourcePrefixes')?.text ?? '';
      expect(checked).toMatch(
        new RegExp(
          String.raw`^empty\(worldOpenSourcePrefixes\)\s*\?\s*allowedSourceAddressPrefixes\s*:\s*` +
            String.raw`fail\('allowedSourceAddressPrefixes ` +
            String.raw`must not open the cluster to the world; refused: \$\{join\(worldOpenSourcePrefixes, ', ` +
            String.raw`'\)\}`,
        ),
      );
    },
  );

  test('4369, 25672 and 35672-35682 are allowed only inside the cluster subnet and denied from anywhere else', () => {
    const interNode = ['4369', '25672', '35672-35682', '6222', '8222'];
    const allows = inboundAllows().filter((rule) => ports(rule).some((port) => interNode.includes(port)));
    expect(allows).toHaveLength(1);
    expect(allows[0]).toMatchObject({
      sourceAddressPrefix: { expression: 'clusterSubnetPrefix' },
      destinationAddressPrefix: { expression: 'clusterSubnetPrefix' },
    });
    expect(ports(allows[0] as Json).sort()).toEqual([...interNode].sort());
    const deny = rules().find(
      (rule) => rule.access === 'Deny' && interNode.every((port) => ports(rule).includes(port)),
    );
    expect(deny).toMatchObject({ direction: 'Inbound', sourceAddressPrefix: '*' });
    expect(deny?.priority as number).toBeGreaterThan(allows[0]?.priority as number);
    // The deny must also win over the default AllowVnetInBound (65000).
    expect(deny?.priority as number).toBeLessThan(65000);
  });

  test('no inbound 22 is allowed, and 22 from the internet is explicitly denied', () => {
    for (const rule of inboundAllows())
      expect({ rule: rule.name, ports: ports(rule) }).not.toEqual({
        rule: rule.name,
        ports: expect.arrayContaining(['22']),
      });
    expect(rules()).toContainEqual(
      expect.objectContaining({
        direction: 'Inbound',
        access: 'Deny',
        sourceAddressPrefix: 'Internet',
        destinationPortRange: '22',
      }),
    );
  });

  test('no inbound allow rule has a "*" or Internet source', () => {
    for (const rule of inboundAllows()) {
      expect({ rule: rule.name, source: rule.sourceAddressPrefix }).not.toEqual({ rule: rule.name, source: '*' });
      expect({ rule: rule.name, source: rule.sourceAddressPrefix }).not.toEqual({
        rule: rule.name,
        source: 'Internet',
      });
    }
  });
});

describe('cluster', () => {
  const cluster = (): BicepFile => file('modules/cluster.bicep');
  const scaleSet = (): Json => asObject(literal(resource(cluster(), 'Microsoft.Compute/virtualMachineScaleSets').body));

  const loadBalancers = (): Map<string, Json> =>
    new Map(
      cluster()
        .resources.filter((candidate) => candidate.resourceType === 'Microsoft.Network/loadBalancers')
        .map((lb) => [lb.name, asObject(literal(lb.body))]),
    );
  const forwardedPorts = (lb: Json): BicepValue => {
    const rules = asObject(lb.properties).loadBalancingRules as { expression: string };
    // A for-expression over a port list: `[for port in <list>: {...}]`; the list is a variable.
    const loop = cluster().variables.get(rules.expression);
    const over = /^\[\s*for port in (\w+):/.exec(loop?.text ?? '')?.[1] ?? '';
    return literal(cluster().variables.get(over) as never);
  };

  test(
    'an internal Standard load balancer forwards AMQP and management (and ' +
      'the TLS listeners when enabled); a public one, only AMQPS and HTTPS',
    () => {
      const lbs = loadBalancers();
      expect([...lbs.keys()]).toEqual(['loadBalancer', 'publicLoadBalancerResource']);
      for (const lb of lbs.values()) expect(lb.sku).toEqual({ name: 'Standard', tier: 'Regional' });
      const internal = lbs.get('loadBalancer') as Json;
      const internalFrontend = asObject(
        (asObject(internal.properties).frontendIPConfigurations as Json[])[0]?.properties,
      );
      expect(internalFrontend.subnet).toEqual({ id: { expression: 'subnetResourceId' } });
      expect(internalFrontend.publicIPAddress).toBeUndefined();
      expect(forwardedPorts(internal)).toEqual({
        expression: 'tlsEnabled ? concat(plainPorts, publicPorts) : plainPorts',
      });
      expect(literal(cluster().variables.get('plainPorts') as never)).toEqual([
        { expression: 'amqpPort' },
        { expression: 'managementPort' },
      ]);
      const publicLb = lbs.get('publicLoadBalancerResource') as Json;
      expect(
        asObject((asObject(publicLb.properties).frontendIPConfigurations as Json[])[0]?.properties).publicIPAddress,
      ).toEqual({ id: { expression: 'publicIp.id' } });
      expect(forwardedPorts(publicLb)).toEqual([{ expression: 'amqpsPort' }, { expression: 'managementTlsPort' }]);
      expect([
        amqpPortsOf('amqpPort'),
        amqpPortsOf('managementPort'),
        amqpPortsOf('amqpsPort'),
        amqpPortsOf('managementTlsPort'),
      ]).toEqual([5672, 15672, 5671, 15671]);
      const declaration = cluster().resources.find((candidate) => candidate.name === 'publicLoadBalancerResource');
      expect(declaration?.node.text).toContain('= if (publicLoadBalancer) {');
      // Every rule goes through the health probe of its own load balancer.
      for (const name of ['internalLoadBalancingRules', 'publicLoadBalancingRules'])
        expect(cluster().variables.get(name)?.text).toMatch(/probes', \w+LoadBalancerName, probeName\)/);
    },
  );
  const amqpPortsOf = (name: string): BicepValue => literal(cluster().variables.get(name) as never);

  test('the health probe asks the node whether it serves AMQP and management and has joined', () => {
    for (const lb of loadBalancers().values())
      expect(asObject(lb.properties).probes).toEqual([{ expression: 'healthProbe' }]);
    const probe = asObject(asObject(literal(cluster().variables.get('healthProbe') as never)).properties);
    expect(probe).toMatchObject({ protocol: 'Http', requestPath: '/healthz', port: { expression: 'healthProbePort' } });
    // The port the probe calls is the one the health server listens on (HEALTH_PORT in node.env).
    expect(cluster().variables.get('nodeEnvironment')?.text).toContain('HEALTH_PORT=${healthProbePort}');
  });

  test(
    'node.env tells the node scripts the TLS secret names (empty ' +
      'without TLS) and the TLS ports, with the keys the node side reads',
    () => {
      const environment = cluster().variables.get('nodeEnvironment')?.text ?? '';
      expect(environment).toContain(
        "\\nTLS_CERTIFICATE_SECRET_NAME=${tlsEnabled ? tlsCertificateSecretName : ''}" +
          "\\nTLS_PRIVATE_KEY_SECRET_NAME=${tlsEnabled ? tlsPrivateKeySecretName : ''}" +
          '\\nAMQPS_PORT=${amqpsPort}\\nMANAGEMENT_TLS_PORT=${managementTlsPort}\\n',
      );
      const main = asObject(
        asObject(
          literal(file('main.bicep').modules.find((module) => module.path === 'modules/cluster.bicep')?.body as never),
        ).params,
      );
      expect(main).toMatchObject({
        tlsEnabled: { expression: 'tlsEnabled' },
        tlsCertificateSecretName: { expression: 'secrets.outputs.tlsCertificateSecretName' },
        tlsPrivateKeySecretName: { expression: 'secrets.outputs.tlsPrivateKeySecretName' },
      });
    },
  );

  test('the scale set is Flexible, zonal, with a managed identity, boot diagnostics and SSH-key-only Linux', () => {
    const vmss = scaleSet();
    const properties = asObject(vmss.properties);
    expect(properties.orchestrationMode).toBe('Flexible');
    expect(vmss.zones).toEqual({ expression: 'empty(availabilityZones) ? null : availabilityZones' });
    expect(literal(cluster().params.get('availabilityZones')?.defaultValue as never)).toEqual(['1', '2', '3']);
    expect(asObject(vmss.identity).type).toBe('UserAssigned');
    const profile = asObject(properties.virtualMachineProfile);
    expect(asObject(asObject(profile.diagnosticsProfile).bootDiagnostics).enabled).toBe(true);
    const linux = asObject(asObject(profile.osProfile).linuxConfiguration);
    expect(linux.disablePasswordAuthentication).toBe(true);
    expect(asObject(profile.osProfile).adminPassword).toBeUndefined();
  });

  test('accelerated networking is on the node NIC and defaults to true everywhere', () => {
    const nics = asObject(asObject(asObject(scaleSet().properties).virtualMachineProfile).networkProfile)
      .networkInterfaceConfigurations as Json[];
    expect(asObject(nics[0]?.properties).enableAcceleratedNetworking).toEqual({ expression: 'acceleratedNetworking' });
    for (const name of ['main.bicep', 'modules/cluster.bicep', 'modules/loadgen.bicep']) {
      expect(file(name).params.get('acceleratedNetworking')?.defaultValue?.text).toBe('true');
    }
    const loadgenNic = asObject(
      literal(resource(file('modules/loadgen.bicep'), 'Microsoft.Network/networkInterfaces').body),
    );
    expect(asObject(loadgenNic.properties).enableAcceleratedNetworking).toEqual({
      expression: 'acceleratedNetworking',
    });
  });

  test(
    'main.bicep passes acceleratedNetworking, the broker texts ' +
      'and the instance count unchanged to the cluster module',
    () => {
      const module = file('main.bicep').modules.find((candidate) => candidate.path === 'modules/cluster.bicep');
      const params = asObject(asObject(literal(module?.body as never)).params);
      expect({ param: 'instanceCount', value: params.instanceCount }).toEqual({
        param: 'instanceCount',
        value: { expression: 'instanceCount' },
      });
      // The broker texts pass through their check (fail() when empty with broker rabbitmq; optional only for kafka).
      for (const name of ['rabbitmqConf', 'enabledPluginsFile', 'policyCommandsJson']) {
        expect({ param: name, value: params[name] }).toEqual({ param: name, value: { expression: `${name}Checked` } });
      }
      // acceleratedNetworking passes through the Dsv5 check (fail() when false on a size that requires it).
      expect(params.acceleratedNetworking).toEqual({ expression: 'acceleratedNetworkingChecked' });
      const checked = file('main.bicep').variables.get('acceleratedNetworkingChecked')?.text ?? '';
      expect(checked).toMatch(
        new RegExp(
          String.raw`^!acceleratedNetworking && \(endsWith\(clusterVmSize, 's_v5'\) \|\| ` +
            String.raw`endsWith\(loadGeneratorVmSize, 's_v5'\)\)\s*\?\s*fail\(`,
        ),
      );
      expect(checked).toMatch(/:\s*acceleratedNetworking$/);
    },
  );

  test('every VM size offered supports accelerated networking (an allowed list of current s-sizes)', () => {
    // Dsv5 requires accelerated networking (https://learn.microsoft.com/azure/virtual-machines/dv5-dsv5-series); Fsv2
    // supports it,
    // F2s_v2 only restricted (https://learn.microsoft.com/azure/virtual-machines/fsv2-series, footnote 4), so it is not
    // offered.
    const accelerated = /^Standard_(D(2|4|8|16)s_v5|E4s_v5|F(4|8|16|32)s_v2)$/;
    for (const [name, param] of [
      ['main.bicep', 'clusterVmSize'],
      ['main.bicep', 'loadGeneratorVmSize'],
      ['modules/cluster.bicep', 'vmSize'],
      ['modules/loadgen.bicep', 'vmSize'],
      ['modules/kafka-cluster.bicep', 'vmSize'],
      ['modules/nats-cluster.bicep', 'vmSize'],
    ] as const) {
      const allowed = file(name)
        .params.get(param)
        ?.decorators.find((decorator) => decorator.startsWith('allowed('));
      const sizes = [...(allowed ?? '').matchAll(/'([^']+)'/g)].map((match) => match[1] as string);
      expect(sizes.length).toBeGreaterThan(0);
      for (const size of sizes) expect(size).toMatch(accelerated);
      // The plan rules (core/cost/azure-vm-sizes.ts) refuse what the templates would refuse, before anything is
      // created.
      expect({ [`${name} ${param}`]: sizes }).toEqual({ [`${name} ${param}`]: AZURE_VM_SIZES });
    }
  });
});

test('the test reads the templates it claims to (bicep/ exists next to test/)', () => {
  expect(files.has('main.bicep')).toBe(true);
  expect(join(BICEP_DIR, 'main.bicep')).toBe(file('main.bicep').path);
});

describe('TLS, secret lifetime and linter suppressions', () => {
  test(
    'a public load balancer requires tlsCertificatePem and the ' +
      '@secure() tlsPrivateKeyPem, refused by name with fail()',
    () => {
      const main = file('main.bicep');
      expect(main.params.get('tlsPrivateKeyPem')?.decorators).toContain('secure()');
      expect(main.params.get('tlsCertificatePem')?.decorators).not.toContain('secure()');
      const tlsEnabled = main.variables.get('tlsEnabled')?.text ?? '';
      expect(tlsEnabled).toMatch(
        new RegExp(
          String.raw`^publicLoadBalancer && !tlsGiven\s*\?\s*fail\('publicLoadBalancer is true, so ` +
            String.raw`tlsCertificatePem and tlsPrivateKeyPem are required`,
        ),
      );
      expect(main.variables.get('tlsGiven')?.text).toBe('!empty(tlsCertificatePem) && !empty(tlsPrivateKeyPem)');
      // The key goes to the secrets module only, into a @secure() parameter (checked above for every secure value).
      const secrets = asObject(
        asObject(literal(main.modules.find((module) => module.path === 'modules/secrets.bicep')?.body as never)).params,
      );
      expect(secrets).toMatchObject({
        tlsCertificatePem: { expression: 'tlsCertificatePem' },
        tlsPrivateKeyPem: { expression: 'tlsPrivateKeyPem' },
      });
      expect(file('modules/secrets.bicep').params.get('tlsPrivateKeyPem')?.decorators).toContain('secure()');
      expect([...main.outputs.keys()]).toEqual(
        expect.arrayContaining([
          'amqpsEndpoint',
          'managementHttpsUrl',
          'tlsCertificatePem',
          'tlsCertificateSecretName',
          'tlsPrivateKeySecretName',
        ]),
      );
    },
  );

  test('the vault holds the certificate and key as secrets, created only when TLS is given', () => {
    const secrets = file('modules/secrets.bicep');
    for (const name of ['tlsCertificateSecret', 'tlsPrivateKeySecret']) {
      const declaration = secrets.resources.find((candidate) => candidate.name === name);
      expect(declaration?.resourceType).toBe('Microsoft.KeyVault/vaults/secrets');
      expect(declaration?.node.text).toContain('= if (tlsEnabled) {');
    }
    const key = asObject(
      asObject(literal(secrets.resources.find((candidate) => candidate.name === 'tlsPrivateKeySecret')?.body as never))
        .properties,
    );
    expect(key.value).toEqual({ expression: 'tlsPrivateKeyPem' });
  });

  test('no Key Vault secret expires: secrets live as long as the cluster', () => {
    for (const [name, bicep] of files) {
      for (const declaration of bicep.resources.filter(
        (candidate) => candidate.resourceType === 'Microsoft.KeyVault/vaults/secrets',
      )) {
        const attributes = asObject(asObject(asObject(literal(declaration.body)).properties).attributes);
        expect({ file: name, secret: declaration.name, attributes }).toEqual({
          file: name,
          secret: declaration.name,
          attributes: { enabled: true },
        });
      }
      expect({ file: name, params: [...bicep.params.keys()].filter((param) => /expir/i.test(param)) }).toEqual({
        file: name,
        params: [],
      });
    }
  });

  test(
    'every output whose name the linter takes for a secret ("password") ' +
      'carries a reasoned #disable-next-line outputs-should-not-contain-secrets',
    () => {
      let seen = 0;
      for (const [name, bicep] of files) {
        for (const output of bicep.outputs.values()) {
          if (!/password/i.test(output.name)) continue;
          seen++;
          const previous = output.node.previousNamedSibling;
          expect({
            file: name,
            output: output.name,
            suppression: previous?.type === 'diagnostic_comment' ? previous.text : undefined,
          }).toEqual({
            file: name,
            output: output.name,
            suppression: expect.stringMatching(/^#disable-next-line outputs-should-not-contain-secrets \/\/ \S.{10,}/),
          });
        }
      }
      expect(seen).toBe(2);
    },
  );
});

/**
 * Evaluates the Bicep expressions main.bicep refuses source prefixes with, over the functions they use, so that the
 * template's rule can be run on real inputs next to core/cloud/source-prefixes.ts (there is no Bicep compiler here).
 * https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-array (filter, contains, last, empty),
 * https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-string (toLower, trim, startsWith,
 * split, join).
 */
type Value = unknown;
function evaluate(node: Node, scope: Readonly<Record<string, Value>>, variables: ReadonlyMap<string, Node>): Value {
  const child = (name: string): Node => node.childForFieldName(name) as Node;
  const named = node.namedChildren.filter((candidate): candidate is Node => candidate !== null);
  switch (node.type) {
    case 'number':
      return Number(node.text);
    case 'boolean':
      return node.text === 'true';
    case 'string': {
      let text = '';
      for (const part of named) {
        if (part.type === 'string_content') text += part.text;
        else if (part.type === 'escape_sequence') text += part.text.slice(1);
        else if (part.type === 'interpolation')
          text += String(evaluate(part.namedChildren[0] as Node, scope, variables));
        else throw new Error(`string part ${part.type}`);
      }
      return text;
    }
    case 'array':
      return named.map((item) => evaluate(item, scope, variables));
    case 'identifier':
      if (node.text in scope) return scope[node.text];
      if (variables.has(node.text)) return evaluate(variables.get(node.text) as Node, scope, variables);
      throw new Error(`unknown identifier ${node.text}`);
    case 'parenthesized_expression':
      return evaluate(named[0] as Node, scope, variables);
    case 'unary_expression':
      return !evaluate(named[0] as Node, scope, variables);
    case 'ternary_expression':
      return evaluate(child('condition'), scope, variables)
        ? evaluate(child('consequence'), scope, variables)
        : evaluate(child('alternative'), scope, variables);
    case 'binary_expression': {
      const operator = node.children.find((candidate) => candidate !== null && !candidate.isNamed)?.text;
      const left = () => evaluate(child('left'), scope, variables);
      const right = () => evaluate(child('right'), scope, variables);
      switch (operator) {
        case '||':
          return Boolean(left()) || Boolean(right());
        case '&&':
          return Boolean(left()) && Boolean(right());
        case '<':
          return (left() as number) < (right() as number);
        case '==':
          return left() === right();
        case '!=':
          return left() !== right();
        default:
          throw new Error(`operator ${operator}`);
      }
    }
    case 'call_expression': {
      const name = child('function').text;
      const args = child('arguments').namedChildren.filter((candidate) => candidate !== null) as Node[];
      if (name === 'filter') {
        const list = evaluate(args[0] as Node, scope, variables) as Value[];
        const lambda = args[1] as Node;
        const parameter = (lambda.namedChildren[0] as Node).text;
        const body = lambda.namedChildren[lambda.namedChildren.length - 1] as Node;
        return list.filter((item) => evaluate(body, { ...scope, [parameter]: item }, variables));
      }
      const values = args.map((argument) => evaluate(argument, scope, variables));
      const [a, b] = values as [never, never];
      switch (name) {
        case 'contains':
          return Array.isArray(a) ? (a as Value[]).includes(b) : (a as string).includes(b);
        case 'toLower':
          return (a as string).toLowerCase();
        case 'trim':
          return (a as string).trim();
        case 'startsWith':
          return (a as string).startsWith(b);
        case 'endsWith':
          return (a as string).endsWith(b);
        case 'split':
          return (a as string).split(b);
        case 'last':
          return (a as Value[])[(a as Value[]).length - 1];
        case 'int': {
          if (!/^-?\d+$/.test(a as string))
            throw new Error(`int('${a as string}'): not an integer (ARM fails the deployment)`);
          return Number(a);
        }
        case 'empty':
          return (a as Value[] | string).length === 0;
        case 'length':
          return (a as Value[] | string).length;
        case 'join':
          return (a as string[]).join(b);
        case 'fail':
          throw new Error(`fail: ${a as string}`);
        default:
          throw new Error(`function ${name}`);
      }
    }
    default:
      throw new Error(`node ${node.type}: ${node.text.slice(0, 40)}`);
  }
}

describe(
  'main.bicep refuses exactly the prefixes ' + 'core/cloud/source-prefixes.ts refuses (its expressions evaluated)',
  () => {
    const samples = [
      '*',
      'Internet',
      'INTERNET',
      ' any ',
      'AzureCloud',
      'AzureCloud.westeurope',
      '0.0.0.0/0',
      '::/0',
      '0.0.0.0/1',
      '128.0.0.0/7',
      '10.0.0.0/8',
      '203.0.113.7/32',
      '198.51.100.0/24',
      '2001:db8::/32',
      'VirtualNetwork',
      'AzureLoadBalancer',
      '10.20.2.0/24',
    ];
    const variables = (): ReadonlyMap<string, Node> => file('main.bicep').variables;

    test.each(samples)('%s: refused by both or by neither', (prefix) => {
      const refusedByTemplate = evaluate(
        variables().get('worldOpenSourcePrefixes') as Node,
        { allowedSourceAddressPrefixes: [prefix] },
        variables(),
      ) as string[];
      expect({ prefix, refused: refusedByTemplate.length > 0 }).toEqual({
        prefix,
        refused: worldOpenReason(prefix) !== undefined,
      });
    });

    test('the deployment fails naming every refused prefix, and passes the accepted ones through unchanged', () => {
      const given = ['203.0.113.7/32', '*', '0.0.0.0/0', 'AzureCloud'];
      expect(() =>
        evaluate(
          variables().get('checkedSourcePrefixes') as Node,
          { allowedSourceAddressPrefixes: given },
          variables(),
        ),
      ).toThrow(
        'fail: allowedSourceAddressPrefixes must not open the cluster to the world; ' +
          'refused: *, 0.0.0.0/0, AzureCloud. Give the addresses that need the cluster',
      );
      const accepted = ['203.0.113.7/32', '10.0.0.0/8'];
      expect(
        evaluate(
          variables().get('checkedSourcePrefixes') as Node,
          { allowedSourceAddressPrefixes: accepted },
          variables(),
        ),
      ).toEqual(accepted);
    });

    test('TLS parameters: required together when the load balancer is public, both or neither otherwise', () => {
      const tls = (publicLoadBalancer: boolean, tlsCertificatePem: string, tlsPrivateKeyPem: string) =>
        evaluate(
          variables().get('tlsEnabled') as Node,
          { publicLoadBalancer, tlsCertificatePem, tlsPrivateKeyPem },
          variables(),
        );
      expect(() => tls(true, '', '')).toThrow(
        'fail: publicLoadBalancer is true, so tlsCertificatePem and tlsPrivateKeyPem are required',
      );
      expect(() => tls(true, 'CERT', '')).toThrow('fail: publicLoadBalancer is true');
      expect(() => tls(false, 'CERT', '')).toThrow('fail: tlsCertificatePem and tlsPrivateKeyPem go together');
      expect(tls(true, 'CERT', 'KEY')).toBe(true);
      expect(tls(false, 'CERT', 'KEY')).toBe(true);
      expect(tls(false, '', '')).toBe(false);
    });

    test('broker texts: refused empty with broker rabbitmq, unchanged when given, optional with broker kafka', () => {
      for (const name of ['rabbitmqConf', 'enabledPluginsFile', 'policyCommandsJson']) {
        const checked = (broker: string, value: string) =>
          evaluate(variables().get(`${name}Checked`) as Node, { broker, [name]: value }, variables());
        expect(() => checked('rabbitmq', '')).toThrow(`fail: broker is rabbitmq, so ${name} is required`);
        expect(checked('rabbitmq', 'TEXT')).toBe('TEXT');
        expect(checked('kafka', '')).toBe('');
        expect(checked('nats', '')).toBe('');
        expect(file('main.bicep').params.get(name)?.defaultValue?.text).toBe("''");
      }
    });

    test(
      'RabbitMQ secrets: refused by name (never quoting the value) when ' +
        'missing or short with broker rabbitmq, not created with broker kafka',
      () => {
        const checked = (broker: string, rabbitmqAdminPassword: string, erlangCookie: string) =>
          evaluate(
            variables().get('rabbitmqSecretsChecked') as Node,
            { broker, rabbitmqAdminPassword, erlangCookie },
            variables(),
          );
        const password = 'p'.repeat(12);
        const cookie = 'C'.repeat(20);
        expect(() => checked('rabbitmq', '', cookie)).toThrow(
          'fail: broker is rabbitmq, so rabbitmqAdminPassword is required: at least 12 characters',
        );
        const refusal = (run: () => unknown): string => {
          try {
            run();
          } catch (error) {
            return (error as Error).message;
          }
          return 'not refused';
        };
        const shortPassword = refusal(() => checked('rabbitmq', 'pw-secret-1', cookie));
        expect(shortPassword).toContain('so rabbitmqAdminPassword is required');
        expect(shortPassword).not.toContain('pw-secret-1');
        expect(() => checked('rabbitmq', password, '')).toThrow(
          'fail: broker is rabbitmq, so erlangCookie is required: at least 20 characters',
        );
        const shortCookie = refusal(() => checked('rabbitmq', password, 'COOKIE-SECRET-01234'));
        expect(shortCookie).toContain('so erlangCookie is required');
        expect(shortCookie).not.toContain('COOKIE-SECRET');
        expect(checked('rabbitmq', password, cookie)).toBe(true);
        // Kafka: nothing required, nothing created, whatever was given.
        expect(checked('kafka', '', '')).toBe(false);
        expect(checked('kafka', password, cookie)).toBe(false);
      },
    );

    test('acceleratedNetworking false is refused when a Dsv5 size is chosen, accepted on Fsv2', () => {
      const check = (acceleratedNetworking: boolean, clusterVmSize: string, loadGeneratorVmSize: string) =>
        evaluate(
          variables().get('acceleratedNetworkingChecked') as Node,
          { acceleratedNetworking, clusterVmSize, loadGeneratorVmSize },
          variables(),
        );
      expect(() => check(false, 'Standard_D4s_v5', 'Standard_F16s_v2')).toThrow(
        'fail: acceleratedNetworking is false, but Standard_D4s_v5 is a Dsv5 or Esv5 size',
      );
      expect(() => check(false, 'Standard_F8s_v2', 'Standard_D2s_v5')).toThrow(
        'but Standard_D2s_v5 is a Dsv5 or Esv5 size',
      );
      expect(check(false, 'Standard_F8s_v2', 'Standard_F16s_v2')).toBe(false);
      expect(check(true, 'Standard_D4s_v5', 'Standard_D4s_v5')).toBe(true);
    });
  },
);
