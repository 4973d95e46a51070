metadata name = 'rmqbench NATS JetStream cluster'
metadata description = 'nats-server JetStream cluster on individual VMs with static private IPs, spread over availability zones; the servers join by cluster routes to every static IP and elect a JetStream meta leader at boot.'

// The shared user-defined types (../types.bicep), imported at compile time:
// https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-import
import { availabilityZoneType, natsSyncIntervalType, tagsType } from '../types.bicep'

@description('Required. Prefix of every resource name.')
@minLength(3)
@maxLength(12)
param namePrefix string

@description('Optional. Location of the resources. Defaults to the resource group location.')
param location string = resourceGroup().location

@description('Optional. Tags applied to every resource (tag names with string values: tagsType).')
param tags tagsType = {}

@description('Required. Resource ID of the subnet the servers live in.')
param subnetResourceId string

@description('Required. Address prefix of that subnet (e.g. 10.20.1.0/24): each server gets a static private IP from it, its stable identity.')
param subnetAddressPrefix string

@description('Optional. Host number, within the subnet, of server 1\'s static IP; server i gets firstHostNumber + i - 1 (cidrHost numbering: 0 is the first usable address). Azure reserves the first four addresses of a subnet, so the default skips past them and the addresses the RabbitMQ nodes or a load balancer may take dynamically.')
@minValue(3)
@maxValue(200)
param firstHostNumber int = 99

@description('Optional. VM size of the servers. Every allowed size supports accelerated networking on its NIC (Dsv5 and Esv5 require it), premium disks and Trusted Launch.')
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

@description('Optional. Number of nats-servers; JetStream\'s meta group is a Raft group of every server, so 3 or 5 keep a majority through one or two failures.')
@minValue(1)
@maxValue(7)
param serverCount int = 3

@description('Optional. Availability zones the servers are spread over (server i in zone i modulo their number). An empty array deploys without zones.')
param availabilityZones availabilityZoneType[] = [
  '1'
  '2'
  '3'
]

@description('Optional. Accelerated networking on the server NICs.')
param acceleratedNetworking bool = true

@description('Optional. Encryption at host for the server disks. Needs the EncryptionAtHost feature registered on the subscription.')
param encryptionAtHost bool = false

@description('Optional. Administrator user name of the VMs (SSH key only; no inbound SSH is allowed from the internet).')
param adminUsername string = 'rmqbench'

@description('Required. SSH public key of the administrator (password login is disabled).')
param adminSshPublicKey string

@description('Optional. Size of each server\'s premium data disk (JetStream\'s store_dir, mounted at /var/lib/nats) in GiB.')
@minValue(32)
@maxValue(4095)
param dataDiskSizeGB int = 64

@description('Optional. nats-server version; bicep/cloud-init/nats-server-<version>.sha256 must pin its release tarball (the pins of cdk/nats-artifacts.ts).')
@allowed([
  '2.15.0'
])
param natsServerVersion string = '2.15.0'

@description('Optional. JetStream\'s sync_interval on every server (natsSyncIntervalType): a duration, or \'always\' to fsync after every write.')
param syncInterval natsSyncIntervalType = '2m'

@description('Optional. Seconds each server waits at boot for the cluster (JetStream enabled, a meta leader, every server in the meta group) before its setup fails.')
@minValue(60)
@maxValue(3600)
param clusterTimeoutSeconds int = 600

var clientPort = 4222
var clusterPort = 6222
var monitoringPort = 8222
// The servers' stable identities: static private IPs, known when the template is deployed, so that every server's routes
// can name all of them before any VM exists. cidrHost(range, 0) is the first usable address; Azure reserves a subnet's
// first four (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-cidr#cidrhost).
var serverHosts = [
  for i in range(0, serverCount): cidrHost(subnetAddressPrefix, firstHostNumber + i)
]
var serverHostList = join(serverHosts, ',')
var clientUrls = [
  for host in serverHosts: 'nats://${host}:${clientPort}'
]

var cloudInitWithSums = replace(loadTextContent('../cloud-init/nats-cluster.yaml'), '{{NATS_SHA256_B64}}', loadFileAsBase64('../cloud-init/nats-server-2.15.0.sha256'))
var cloudInitWithSetup = replace(cloudInitWithSums, '{{NATS_SETUP_B64}}', loadFileAsBase64('../cloud-init/rmqbench-nats-setup.sh'))

resource networkInterfaces 'Microsoft.Network/networkInterfaces@2024-05-01' = [
  for i in range(0, serverCount): {
    name: '${namePrefix}-nats-${i + 1}-nic'
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
            privateIPAddress: serverHosts[i]
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

resource servers 'Microsoft.Compute/virtualMachines@2024-07-01' = [
  for i in range(0, serverCount): {
    // checkov:skip=CKV_AZURE_97: encryption at host is a parameter (encryptionAtHost), off by default because it fails on subscriptions without the EncryptionAtHost feature registered; disks are still encrypted at rest with platform keys.
    // checkov:skip=CKV_AZURE_50: extension operations stay allowed because the benchmark controller reaches the VMs through `az vm run-command`, which is itself a VM extension.
    // checkov:skip=CKV_AZURE_151: a Windows-only check; these VMs run Linux (linuxConfiguration).
    name: '${namePrefix}-nats-${i + 1}'
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
        computerName: '${namePrefix}-nats-${i + 1}'
        adminUsername: adminUsername
        customData: base64(replace(cloudInitWithSetup, '{{NATS_ENV_B64}}', base64('NODE_INDEX=${i + 1}\nSERVER_HOSTS=${serverHostList}\nCLIENT_PORT=${clientPort}\nCLUSTER_PORT=${clusterPort}\nMONITORING_PORT=${monitoringPort}\nNATS_VERSION=${natsServerVersion}\nSYNC_INTERVAL=${syncInterval}\nCLUSTER_TIMEOUT_SECONDS=${clusterTimeoutSeconds}\n')))
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

@description('The name of server 1\'s VM (the servers are <namePrefix>-nats-1 to -<serverCount>).')
output name string = servers[0].name

@description('The resource ID of server 1\'s VM.')
output resourceId string = servers[0].id

@description('The resource IDs of every server VM, in index order.')
output serverResourceIds array = [
  for i in range(0, serverCount): servers[i].id
]

@description('The servers\' static private IPs, in index order (server_name nats-i is element i - 1).')
output serverPrivateIpAddresses array = serverHosts

@description('NATS client URLs of every server (port 4222, no authentication inside the VNet), comma-separated.')
output serverUrls string = join(clientUrls, ',')
