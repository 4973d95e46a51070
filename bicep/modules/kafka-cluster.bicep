metadata name = 'rmqbench Kafka cluster'
metadata description = 'Apache Kafka brokers in KRaft mode (each a broker and a controller, no ZooKeeper) on individual VMs with static private IPs, spread over availability zones; the brokers form a static quorum at boot.'

// The shared user-defined types (../types.bicep), imported at compile time:
// https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-import
import { availabilityZoneType, tagsType } from '../types.bicep'

@description('Required. Prefix of every resource name.')
@minLength(3)
@maxLength(12)
param namePrefix string

@description('Optional. Location of the resources. Defaults to the resource group location.')
param location string = resourceGroup().location

@description('Optional. Tags applied to every resource (tag names with string values: tagsType).')
param tags tagsType = {}

@description('Required. Resource ID of the subnet the brokers live in.')
param subnetResourceId string

@description('Required. Address prefix of that subnet (e.g. 10.20.1.0/24): each broker gets a static private IP from it, its stable identity.')
param subnetAddressPrefix string

@description('Optional. Host number, within the subnet, of broker 1\'s static IP; broker i gets firstHostNumber + i - 1 (cidrHost numbering: 0 is the first usable address). Azure reserves the first four addresses of a subnet, so the default skips past them and the addresses the RabbitMQ nodes or a load balancer may take dynamically.')
@minValue(3)
@maxValue(200)
param firstHostNumber int = 99

@description('Optional. VM size of the brokers. Every allowed size supports accelerated networking on its NIC (Dsv5 and Esv5 require it), premium disks and Trusted Launch.')
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
param vmSize string = 'Standard_D2s_v5'

@description('Optional. Number of brokers; every broker is also a KRaft controller, so 3 or 5 keep a metadata majority through one or two failures.')
@minValue(1)
@maxValue(7)
param brokerCount int = 3

@description('Optional. Availability zones the brokers are spread over (broker i in zone i modulo their number). An empty array deploys without zones.')
param availabilityZones availabilityZoneType[] = [
  '1'
  '2'
  '3'
]

@description('Optional. Accelerated networking on the broker NICs.')
param acceleratedNetworking bool = true

@description('Optional. Encryption at host for the broker disks. Needs the EncryptionAtHost feature registered on the subscription.')
param encryptionAtHost bool = false

@description('Optional. Administrator user name of the VMs (SSH key only; no inbound SSH is allowed from the internet).')
param adminUsername string = 'rmqbench'

@description('Required. SSH public key of the administrator (password login is disabled).')
param adminSshPublicKey string

@description('Optional. Size of each broker\'s premium data disk (mounted at /var/lib/kafka) in GiB.')
@minValue(32)
@maxValue(4095)
param dataDiskSizeGB int = 64

@description('Optional. Kafka version; bicep/cloud-init/kafka-<version>.sha256 must pin its jars.')
@allowed([
  '4.3.1'
])
param kafkaVersion string = '4.3.1'

@description('Optional. Ubuntu package that provides the Java runtime for Kafka.')
@allowed([
  'openjdk-21-jre-headless'
])
param javaPackage string = 'openjdk-21-jre-headless'

@description('Optional. Seconds each broker waits at boot for the whole quorum (a leader and every broker a voter) before its setup fails.')
@minValue(60)
@maxValue(3600)
param quorumTimeoutSeconds int = 900

var clientPort = 9092
var controllerPort = 9093
// cidrHost(range, 0) is the range's first usable address, and 3 the first Azure lets a NIC take: Azure reserves a subnet's
// first four addresses (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-cidr#cidrhost).
// The brokers' stable identities: static private IPs, known when the template is deployed, so that every broker's
// controller.quorum.voters and advertised.listeners can name all of them before any VM exists.
var brokerHosts = [
  for i in range(0, brokerCount): cidrHost(subnetAddressPrefix, firstHostNumber + i)
]
var brokerHostList = join(brokerHosts, ',')
var bootstrapEndpoints = [
  for host in brokerHosts: '${host}:${clientPort}'
]
// Every broker derives the same KRaft cluster id from this seed (rmqbench-kafka-setup --print-cluster-id); it is not a secret.
var clusterSeed = '${resourceGroup().id}/${namePrefix}-kafka'

var kafkaManifest = loadFileAsBase64('../cloud-init/kafka-4.3.1.sha256')
var cloudInitWithManifest = replace(loadTextContent('../cloud-init/kafka-cluster.yaml'), '{{KAFKA_MANIFEST_B64}}', kafkaManifest)
var cloudInitWithLog4j = replace(cloudInitWithManifest, '{{KAFKA_LOG4J_B64}}', loadFileAsBase64('../cloud-init/kafka-log4j2.properties'))
var cloudInitWithSetup = replace(cloudInitWithLog4j, '{{KAFKA_SETUP_B64}}', loadFileAsBase64('../cloud-init/rmqbench-kafka-setup.sh'))

resource networkInterfaces 'Microsoft.Network/networkInterfaces@2024-05-01' = [
  for i in range(0, brokerCount): {
    name: '${namePrefix}-kafka-${i + 1}-nic'
    location: location
    tags: tags
    properties: {
      enableAcceleratedNetworking: acceleratedNetworking
      ipConfigurations: [
        {
          name: 'ipconfig'
          properties: {
            primary: true
            privateIPAllocationMethod: 'Static'
            privateIPAddress: brokerHosts[i]
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

resource brokers 'Microsoft.Compute/virtualMachines@2024-07-01' = [
  for i in range(0, brokerCount): {
    // checkov:skip=CKV_AZURE_97: encryption at host is a parameter (encryptionAtHost), off by default because it fails on subscriptions without the EncryptionAtHost feature registered; disks are still encrypted at rest with platform keys.
    // checkov:skip=CKV_AZURE_50: extension operations stay allowed because the benchmark controller reaches the VMs through `az vm run-command`, which is itself a VM extension.
    // checkov:skip=CKV_AZURE_151: a Windows-only check; these VMs run Linux (linuxConfiguration).
    name: '${namePrefix}-kafka-${i + 1}'
    location: location
    tags: tags
    zones: empty(availabilityZones) ? null : [
      availabilityZones[i % length(availabilityZones)]
    ]
    properties: {
      hardwareProfile: {
        vmSize: vmSize
      }
      osProfile: {
        computerName: '${namePrefix}-kafka-${i + 1}'
        adminUsername: adminUsername
        customData: base64(replace(cloudInitWithSetup, '{{KAFKA_ENV_B64}}', base64('NODE_ID=${i + 1}\nBROKER_HOSTS=${brokerHostList}\nCLIENT_PORT=${clientPort}\nCONTROLLER_PORT=${controllerPort}\nCLUSTER_SEED=${clusterSeed}\nKAFKA_VERSION=${kafkaVersion}\nJAVA_PACKAGE=${javaPackage}\nQUORUM_TIMEOUT_SECONDS=${quorumTimeoutSeconds}\n')))
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
        dataDisks: [
          {
            lun: 0
            createOption: 'Empty'
            diskSizeGB: dataDiskSizeGB
            caching: 'None'
            deleteOption: 'Delete'
            managedDisk: {
              storageAccountType: 'Premium_LRS'
            }
          }
        ]
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
  }
]

@description('The name of broker 1\'s VM (the brokers are <namePrefix>-kafka-1 to -<brokerCount>).')
output name string = brokers[0].name

@description('The resource ID of broker 1\'s VM.')
output resourceId string = brokers[0].id

@description('The resource IDs of every broker VM, in node id order.')
output brokerResourceIds array = [
  for i in range(0, brokerCount): brokers[i].id
]

@description('The brokers\' static private IPs, in node id order (node.id i is element i - 1).')
output brokerPrivateIpAddresses array = brokerHosts

@description('Kafka bootstrap.servers: every broker\'s advertised listener, PLAINTEXT inside the VNet.')
output bootstrapServers string = join(bootstrapEndpoints, ',')
