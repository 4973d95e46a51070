metadata name = 'rmqbench network'
metadata description = 'VNet with a cluster subnet and a load-generator subnet, one NSG, and a NAT gateway for outbound package downloads.'

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

@description('Optional. Address space of the virtual network.')
param addressPrefix string = '10.20.0.0/16'

@description('Optional. Address prefix of the subnet that holds the RabbitMQ nodes. Inter-node ports are open only inside it.')
param clusterSubnetPrefix string = '10.20.1.0/24'

@description('Optional. Address prefix of the subnet that holds the load generator.')
param loadGeneratorSubnetPrefix string = '10.20.2.0/24'

@description('Required. Source address prefixes (CIDR or service tags) allowed to reach allowedSourcePorts on the cluster subnet. There is deliberately no default: pass your own address, never "*" (main.bicep refuses world-open prefixes).')
@minLength(1)
param allowedSourceAddressPrefixes string[]

@description('Optional. Client ports allowedSourceAddressPrefixes may reach: the TLS listeners only (5671, 15671) behind a public load balancer. The load-generator subnet always reaches every client port.')
@minLength(1)
param allowedSourcePorts string[] = [
  '5671'
  '15671'
]

@description('Optional. Port of the per-node health endpoint the load balancer probes (answers 200 only when the node serves AMQP and management and has joined the cluster).')
@minValue(1024)
@maxValue(65535)
param healthProbePort int = 8081

// AMQP and management, plain and TLS, and NATS clients (4222): reachable from the load-generator subnet and
// (allowedSourcePorts) from the allowed sources only.
var clientPorts = [
  '5672'
  '5671'
  '15672'
  '15671'
  '4222'
]
// epmd, Erlang distribution and the CLI tools' distribution range; NATS cluster routes (6222) and monitoring (8222):
// cluster-internal only.
var interNodePorts = [
  '4369'
  '25672'
  '35672-35682'
  '6222'
  '8222'
]

resource natPublicIp 'Microsoft.Network/publicIPAddresses@2024-05-01' = {
  name: '${namePrefix}-nat-pip'
  location: location
  tags: tags
  sku: {
    name: 'Standard'
    tier: 'Regional'
  }
  properties: {
    publicIPAllocationMethod: 'Static'
    publicIPAddressVersion: 'IPv4'
  }
}

// Flexible scale sets and new subnets get no default outbound access; the nodes need it for apt and Maven Central.
resource natGateway 'Microsoft.Network/natGateways@2024-05-01' = {
  name: '${namePrefix}-nat'
  location: location
  tags: tags
  sku: {
    name: 'Standard'
  }
  properties: {
    idleTimeoutInMinutes: 4
    publicIpAddresses: [
      {
        id: natPublicIp.id
      }
    ]
  }
}

resource networkSecurityGroup 'Microsoft.Network/networkSecurityGroups@2024-05-01' = {
  name: '${namePrefix}-nsg'
  location: location
  tags: tags
  properties: {
    securityRules: [
      {
        name: 'AllowClientPortsFromAllowedSources'
        properties: {
          description: 'The allowed client ports (only the TLS listeners behind a public load balancer) from the allowed source prefixes only.'
          priority: 100
          direction: 'Inbound'
          access: 'Allow'
          protocol: 'Tcp'
          sourceAddressPrefixes: allowedSourceAddressPrefixes
          sourcePortRange: '*'
          destinationAddressPrefix: clusterSubnetPrefix
          destinationPortRanges: allowedSourcePorts
        }
      }
      {
        name: 'AllowClientPortsFromLoadGenerator'
        properties: {
          description: 'AMQP and management, plain and TLS, from the load-generator subnet (inside the VNet).'
          priority: 105
          direction: 'Inbound'
          access: 'Allow'
          protocol: 'Tcp'
          sourceAddressPrefix: loadGeneratorSubnetPrefix
          sourcePortRange: '*'
          destinationAddressPrefix: clusterSubnetPrefix
          destinationPortRanges: clientPorts
        }
      }
      {
        name: 'AllowInterNodeWithinClusterSubnet'
        properties: {
          description: 'epmd 4369, distribution 25672 and CLI 35672-35682 between cluster nodes only.'
          priority: 110
          direction: 'Inbound'
          access: 'Allow'
          protocol: 'Tcp'
          sourceAddressPrefix: clusterSubnetPrefix
          sourcePortRange: '*'
          destinationAddressPrefix: clusterSubnetPrefix
          destinationPortRanges: interNodePorts
        }
      }
      {
        name: 'AllowHealthProbeFromLoadBalancer'
        properties: {
          description: 'The load balancer health probe.'
          priority: 120
          direction: 'Inbound'
          access: 'Allow'
          protocol: 'Tcp'
          sourceAddressPrefix: 'AzureLoadBalancer'
          sourcePortRange: '*'
          destinationAddressPrefix: clusterSubnetPrefix
          destinationPortRange: string(healthProbePort)
        }
      }
      {
        name: 'AllowHealthEndpointWithinClusterSubnet'
        properties: {
          description: 'A joining node asks its peers whether they have formed the cluster.'
          priority: 130
          direction: 'Inbound'
          access: 'Allow'
          protocol: 'Tcp'
          sourceAddressPrefix: clusterSubnetPrefix
          sourcePortRange: '*'
          destinationAddressPrefix: clusterSubnetPrefix
          destinationPortRange: string(healthProbePort)
        }
      }
      {
        // The default AllowVnetInBound rule would otherwise open these ports to the whole VNet and its peerings.
        name: 'DenyInterNodeFromElsewhere'
        properties: {
          description: 'Inter-node ports from anywhere outside the cluster subnet.'
          priority: 4000
          direction: 'Inbound'
          access: 'Deny'
          protocol: '*'
          sourceAddressPrefix: '*'
          sourcePortRange: '*'
          destinationAddressPrefix: '*'
          destinationPortRanges: interNodePorts
        }
      }
      {
        name: 'DenyClientPortsFromElsewhere'
        properties: {
          description: 'AMQP and management, plain and TLS, from sources that are not allowed (including the rest of the VNet).'
          priority: 4010
          direction: 'Inbound'
          access: 'Deny'
          protocol: '*'
          sourceAddressPrefix: '*'
          sourcePortRange: '*'
          destinationAddressPrefix: '*'
          destinationPortRanges: clientPorts
        }
      }
      {
        // No SSH at all from the internet; operators use `az vm run-command` or Azure Bastion.
        name: 'DenySshFromInternet'
        properties: {
          description: 'No inbound SSH from the internet.'
          priority: 4020
          direction: 'Inbound'
          access: 'Deny'
          protocol: '*'
          sourceAddressPrefix: 'Internet'
          sourcePortRange: '*'
          destinationAddressPrefix: '*'
          destinationPortRange: '22'
        }
      }
    ]
  }
}

resource virtualNetwork 'Microsoft.Network/virtualNetworks@2024-05-01' = {
  name: '${namePrefix}-vnet'
  location: location
  tags: tags
  properties: {
    addressSpace: {
      addressPrefixes: [
        addressPrefix
      ]
    }
    subnets: [
      {
        name: 'cluster'
        properties: {
          addressPrefix: clusterSubnetPrefix
          networkSecurityGroup: {
            id: networkSecurityGroup.id
          }
          natGateway: {
            id: natGateway.id
          }
          defaultOutboundAccess: false
          // The Key Vault firewall admits this subnet through its service endpoint.
          serviceEndpoints: [
            {
              service: 'Microsoft.KeyVault'
            }
          ]
        }
      }
      {
        name: 'loadgen'
        properties: {
          addressPrefix: loadGeneratorSubnetPrefix
          networkSecurityGroup: {
            id: networkSecurityGroup.id
          }
          natGateway: {
            id: natGateway.id
          }
          defaultOutboundAccess: false
          // Storage for result uploads; Key Vault so that the vault firewall admits the load generator (it reads the admin password).
          serviceEndpoints: [
            {
              service: 'Microsoft.Storage'
            }
            {
              service: 'Microsoft.KeyVault'
            }
          ]
        }
      }
    ]
  }
}

@description('The name of the virtual network.')
output name string = virtualNetwork.name

@description('The resource ID of the virtual network.')
output resourceId string = virtualNetwork.id

@description('The resource ID of the subnet that holds the RabbitMQ nodes.')
output clusterSubnetResourceId string = virtualNetwork.properties.subnets[0].id

@description('The resource ID of the subnet that holds the load generator.')
output loadGeneratorSubnetResourceId string = virtualNetwork.properties.subnets[1].id

@description('The resource ID of the network security group.')
output networkSecurityGroupResourceId string = networkSecurityGroup.id
