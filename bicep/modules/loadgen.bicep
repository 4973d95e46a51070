metadata name = 'rmqbench load generator'
metadata description = 'Linux VM with Java and a pinned, checksummed PerfTest that drives the cluster and uploads its results to a pre-signed URL.'

// The shared user-defined types (../types.bicep), imported at compile time:
// https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-import
import { tagsType } from '../types.bicep'

@description('Required. Prefix of every resource name.')
@minLength(3)
@maxLength(12)
param namePrefix string

@description('Optional. Location of the resources. Defaults to the resource group location.')
param location string = resourceGroup().location

@description('Optional. Tags applied to every resource (tag names with string values: tagsType).')
param tags tagsType = {}

@description('Required. Resource ID of the subnet the VM lives in.')
param subnetResourceId string

// The bound is the plan's (MAX_LOAD_GENERATORS, core/loadgen/load-generator-count.ts) and the AWS LoadGenerator's
// `count`: beyond 10 the workload split leaves too few queues per generator, and the vCPU quota, not the brokers,
// becomes the limit. Bicep loops take at most 800 iterations (https://learn.microsoft.com/azure/azure-resource-manager/bicep/loops).
@description('Optional. Number of load generator VMs, each with its own NIC, sharing one identity, subnet and zone. The first keeps the single generator\'s names (<namePrefix>-loadgen, <namePrefix>-loadgen-nic); the others are suffixed with their 1-based number (<namePrefix>-loadgen-2). The benchmark controller still deploys 1.')
@minValue(1)
@maxValue(10)
param loadGeneratorCount int = 1

@description('Optional. VM size. Every allowed size supports accelerated networking on its NIC (Dsv5 and Esv5 require it), premium disks and Trusted Launch.')
@allowed([
  'Standard_D2s_v5'
  'Standard_D4s_v5'
  'Standard_D8s_v5'
  'Standard_D16s_v5'
  'Standard_E4s_v5'
  'Standard_F4s_v2'
  'Standard_F8s_v2'
  'Standard_F16s_v2'
  'Standard_F32s_v2'
])
param vmSize string = 'Standard_F16s_v2'

@description('Optional. Availability zone of the VM (the thesis placed the testing instance with the cluster). Empty for no zone.')
param availabilityZone string = '1'

@description('Optional. Accelerated networking on the NIC.')
param acceleratedNetworking bool = true

@description('Optional. Encryption at host for the VM disks. Needs the EncryptionAtHost feature registered on the subscription.')
param encryptionAtHost bool = false

@description('Optional. Administrator user name (SSH key only; no inbound SSH is allowed from the internet).')
param adminUsername string = 'rmqbench'

@description('Required. SSH public key of the administrator (password login is disabled).')
param adminSshPublicKey string

@description('Optional. PerfTest version; bicep/cloud-init/perf-test-<version>.sha256 must pin its jars.')
@allowed([
  '2.22.1'
])
param perfTestVersion string = '2.22.1'

@description('Optional. Also install the Go toolchain (pinned by sha256) with which the controller\'s NATS scripts build rmqbench\'s NATS load client: for a NATS cluster\'s load generator.')
param natsTools bool = false

@description('Optional. Ubuntu package that provides the Java runtime for PerfTest.')
@allowed([
  'openjdk-21-jre-headless'
  'openjdk-17-jre-headless'
])
param javaPackage string = 'openjdk-21-jre-headless'

@description('Required. Name of the Key Vault holding the RabbitMQ admin password; the VM identity gets Key Vault Secrets User on it, and the PerfTest Run Command script reads the password from it at run time.')
@minLength(3)
@maxLength(24)
param keyVaultName string

@description('Optional. Name of an existing storage account in this resource group to which the VM identity may write results (Storage Blob Data Contributor). Empty: results go only through pre-signed URLs.')
param resultsStorageAccountName string = ''

// Storage Blob Data Contributor.
var blobContributorRoleId = 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
// Key Vault Secrets User.
var keyVaultSecretsUserRoleId = '4633458b-17de-408a-b874-0445c86b69e6'

// PerfTest 2.22.1 and its 24 dependencies from Maven Central, each with its sha256 (checked at install).
var perfTestManifest = loadFileAsBase64('../cloud-init/perf-test-2.22.1.sha256')
var loadgenWithManifest = replace(loadTextContent('../cloud-init/loadgen.yaml'), '{{PERF_TEST_MANIFEST_B64}}', perfTestManifest)
var loadgenWithSetup = replace(loadgenWithManifest, '{{LOADGEN_SETUP_B64}}', loadFileAsBase64('../cloud-init/rmqbench-loadgen-setup.sh'))
var loadgenWithUpload = replace(loadgenWithSetup, '{{UPLOAD_B64}}', loadFileAsBase64('../cloud-init/rmqbench-upload.sh'))
var loadgenWithVersion = replace(loadgenWithUpload, '{{PERF_TEST_VERSION}}', perfTestVersion)
var loadgenWithJava = replace(loadgenWithVersion, '{{JAVA_PACKAGE}}', javaPackage)
// The Kafka version of the tools: loadFileAsBase64 takes only a compile-time path, so it is fixed with its manifest's name.
var kafkaToolsVersion = '4.3.1'
// Apache Kafka's performance tools, the 92 jars the Kafka brokers run (cdk/kafka-artifacts.ts), each with its sha256,
// installed after PerfTest by cloud-init/rmqbench-kafka-tools-setup.sh as the AWS load generator installs them.
var loadgenWithKafkaManifest = replace(loadgenWithJava, '{{KAFKA_MANIFEST_B64}}', loadFileAsBase64('../cloud-init/kafka-4.3.1.sha256'))
var loadgenWithKafkaLog4j = replace(loadgenWithKafkaManifest, '{{KAFKA_TOOL_LOG4J_B64}}', loadFileAsBase64('../cloud-init/kafka-tool-log4j2.properties'))
var loadgenWithKafkaSetup = replace(loadgenWithKafkaLog4j, '{{KAFKA_TOOLS_SETUP_B64}}', loadFileAsBase64('../cloud-init/rmqbench-kafka-tools-setup.sh'))
var loadgenWithKafkaVersion = replace(loadgenWithKafkaSetup, '{{KAFKA_VERSION}}', kafkaToolsVersion)
// The jar download and check both setup scripts source (one copy in the customData, not one per script). Everything
// above goes into customData, whose decoded size Azure caps: "The base-64 encoded string is decoded to a binary array
// [...]. The maximum length of the binary array is 65535 bytes." (the Compute API's customData, as @azure/arm-compute
// documents it: https://learn.microsoft.com/javascript/api/@azure/arm-compute/osprofileprovisioningdata);
// test/bicep/cloud-init.test.ts keeps the rendered YAML under it.
var loadgenWithJarsLib = replace(loadgenWithKafkaVersion, '{{JARS_LIB_B64}}', loadFileAsBase64('../cloud-init/rmqbench-jars.sh'))
// The Go toolchain for the NATS load client (cloud-init/rmqbench-go-setup.sh, the pins of cdk/go-toolchain.ts), installed
// only where natsTools asks for it: the setup script gets 'none' otherwise and installs nothing.
var goVersion = '1.26.7'
var loadgenWithGoSums = replace(loadgenWithJarsLib, '{{GO_SHA256_B64}}', loadFileAsBase64('../cloud-init/go-1.26.7.sha256'))
var loadgenWithGoSetup = replace(loadgenWithGoSums, '{{GO_SETUP_B64}}', loadFileAsBase64('../cloud-init/rmqbench-go-setup.sh'))
var loadgenCloudInit = replace(loadgenWithGoSetup, '{{GO_VERSION}}', natsTools ? goVersion : 'none')

// The generators' names: the first as the single generator was named, so that count 1 deploys what it always did.
var loadGeneratorNames = [
  for i in range(0, loadGeneratorCount): i == 0 ? '${namePrefix}-loadgen' : '${namePrefix}-loadgen-${i + 1}'
]

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${namePrefix}-loadgen-id'
  location: location
  tags: tags
}

resource keyVault 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: keyVaultName
}

// The Run Command script reads the admin password with this identity, so it never travels in the script.
resource secretsUserAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(keyVault.id, identity.id, keyVaultSecretsUserRoleId)
  scope: keyVault
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUserRoleId)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    description: 'The load generator reads the RabbitMQ admin password when it starts PerfTest.'
  }
}

resource resultsStorageAccount 'Microsoft.Storage/storageAccounts@2023-05-01' existing = if (!empty(resultsStorageAccountName)) {
  name: empty(resultsStorageAccountName) ? 'unused' : resultsStorageAccountName
}

resource resultsWriterAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(resultsStorageAccountName)) {
  name: guid(resourceGroup().id, identity.id, blobContributorRoleId, resultsStorageAccountName)
  scope: resultsStorageAccount
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', blobContributorRoleId)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    description: 'The load generator writes benchmark results.'
  }
}

// One NIC and one VM per generator, with an integer-index loop, "[for <index> in range(<startIndex>,
// <numberOfElements>): { ... }]" (https://learn.microsoft.com/azure/azure-resource-manager/bicep/loops#integer-index).
resource networkInterfaces 'Microsoft.Network/networkInterfaces@2024-05-01' = [
  for i in range(0, loadGeneratorCount): {
    name: '${loadGeneratorNames[i]}-nic'
    location: location
    tags: tags
    properties: {
      enableAcceleratedNetworking: acceleratedNetworking
      ipConfigurations: [
        {
          name: 'ipconfig'
          properties: {
            primary: true
            privateIPAllocationMethod: 'Dynamic'
            privateIPAddressVersion: 'IPv4'
            subnet: {
              id: subnetResourceId
            }
          }
        }
      ]
    }
  }
]

resource virtualMachines 'Microsoft.Compute/virtualMachines@2024-07-01' = [
  for i in range(0, loadGeneratorCount): {
    // checkov:skip=CKV_AZURE_97: encryption at host is a parameter (encryptionAtHost), off by default because it fails on subscriptions without the EncryptionAtHost feature registered; disks are still encrypted at rest with platform keys.
    // checkov:skip=CKV_AZURE_50: extension operations stay allowed because the benchmark controller runs PerfTest through `az vm run-command`, which is itself a VM extension.
    // checkov:skip=CKV_AZURE_151: a Windows-only check; this VM runs Linux (linuxConfiguration).
    name: loadGeneratorNames[i]
    location: location
    tags: tags
    zones: empty(availabilityZone) ? null : [
      availabilityZone
    ]
    identity: {
      type: 'UserAssigned'
      userAssignedIdentities: {
        '${identity.id}': {}
      }
    }
    properties: {
      hardwareProfile: {
        vmSize: vmSize
      }
      osProfile: {
        computerName: loadGeneratorNames[i]
        adminUsername: adminUsername
        customData: base64(loadgenCloudInit)
        linuxConfiguration: {
          disablePasswordAuthentication: true
          provisionVMAgent: true
          ssh: {
            publicKeys: [
              {
                path: '/home/${adminUsername}/.ssh/authorized_keys'
                keyData: adminSshPublicKey
              }
            ]
          }
        }
      }
      storageProfile: {
        imageReference: {
          publisher: 'Canonical'
          offer: 'ubuntu-24_04-lts'
          sku: 'server'
          version: 'latest'
        }
        osDisk: {
          createOption: 'FromImage'
          caching: 'ReadWrite'
          deleteOption: 'Delete'
          managedDisk: {
            storageAccountType: 'Premium_LRS'
          }
        }
      }
      networkProfile: {
        networkInterfaces: [
          {
            id: networkInterfaces[i].id
            properties: {
              primary: true
              deleteOption: 'Delete'
            }
          }
        ]
      }
      diagnosticsProfile: {
        bootDiagnostics: {
          enabled: true
        }
      }
      securityProfile: {
        securityType: 'TrustedLaunch'
        uefiSettings: {
          secureBootEnabled: true
          vTpmEnabled: true
        }
        encryptionAtHost: encryptionAtHost
      }
    }
    // Assigned before the VM exists, so that the role has propagated by the first Run Command.
    dependsOn: [
      secretsUserAssignment
    ]
  }
]

@description('The name of the (first) load generator VM.')
output name string = virtualMachines[0].name

@description('The resource ID of the (first) load generator VM (the controller runs PerfTest on it with `az vm run-command`).')
output resourceId string = virtualMachines[0].id

@description('The private IP address of the (first) load generator.')
output privateIpAddress string = networkInterfaces[0].properties.ipConfigurations[0].properties.privateIPAddress

// Output loops, "output <output-name> array = [for <index> in range(<start>, <stop>): ...]"
// (https://learn.microsoft.com/azure/azure-resource-manager/bicep/loop-outputs#loop-index).
@description('The resource IDs of every load generator VM, in order (index 0 is resourceId): one Run Command each.')
output loadGeneratorVmIds array = [for i in range(0, loadGeneratorCount): virtualMachines[i].id]

@description('The names of every load generator VM, in order (index 0 is name).')
output loadGeneratorVmNames array = [for i in range(0, loadGeneratorCount): virtualMachines[i].name]

@description('The private IP addresses of every load generator, in order (index 0 is privateIpAddress).')
output loadGeneratorPrivateIpAddresses array = [
  for i in range(0, loadGeneratorCount): networkInterfaces[i].properties.ipConfigurations[0].properties.privateIPAddress
]

@description('The principal ID of the load generator\'s user-assigned identity.')
output identityPrincipalId string = identity.properties.principalId

@description('The client ID of the load generator\'s user-assigned identity (the `client_id` of its IMDS token requests).')
output identityClientId string = identity.properties.clientId
