metadata name = 'rmqbench cluster'
metadata description = 'RabbitMQ nodes on a Flexible VM Scale Set across availability zones behind a Standard load balancer; the nodes form the cluster by themselves at boot.'

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

@description('Required. Resource ID of the subnet the nodes (and an internal load balancer frontend) live in.')
param subnetResourceId string

@description('Optional. VM size of the nodes. Every allowed size supports accelerated networking on its NIC (Dsv5 and Esv5 require it), premium disks and Trusted Launch.')
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

@description('Optional. Number of RabbitMQ nodes. A scaled-out instance joins the existing cluster.')
@minValue(1)
@maxValue(7)
param instanceCount int = 3

@description('Optional. Availability zones to spread the nodes over. An empty array deploys without zones (regions that have none).')
param availabilityZones availabilityZoneType[] = [
  '1'
  '2'
  '3'
]

@description('Optional. Accelerated networking on the node NICs (the thesis measured up to 660% more throughput with it).')
param acceleratedNetworking bool = true

@description('Optional. Encryption at host for the node disks. Needs the EncryptionAtHost feature registered on the subscription.')
param encryptionAtHost bool = false

@description('Optional. Give the load balancer a public IP (reachable only from the NSG\'s allowed source prefixes); it then forwards only AMQPS 5671 and management HTTPS 15671, so tlsEnabled must be true. False keeps it internal to the VNet.')
param publicLoadBalancer bool = false

@description('Optional. The nodes serve AMQPS 5671 and management HTTPS 15671 with the certificate and key in Key Vault (tlsCertificateSecretName, tlsPrivateKeySecretName).')
param tlsEnabled bool = false

@description('Optional. Name of the Key Vault secret holding the TLS certificate (PEM). Empty without TLS.')
#disable-next-line secure-secrets-in-params // a secret's name, not its value (https://learn.microsoft.com/azure/azure-resource-manager/bicep/linter-rule-secure-secrets-in-parameters)
param tlsCertificateSecretName string = ''

@description('Optional. Name of the Key Vault secret holding the TLS private key (PEM). Empty without TLS.')
#disable-next-line secure-secrets-in-params // a secret's name, not its value
param tlsPrivateKeySecretName string = ''

@description('Optional. Administrator user name of the VMs (SSH key only; no inbound SSH is allowed from the internet).')
param adminUsername string = 'rmqbench'

@description('Required. SSH public key of the administrator (password login is disabled).')
param adminSshPublicKey string

@description('Optional. OS disk size in GiB.')
@minValue(30)
@maxValue(1024)
param osDiskSizeGB int = 64

@description('Optional. RabbitMQ version to install from the Team RabbitMQ apt repository (full version, e.g. 3.13.7). Classic mirroring needs 3.x.')
param rabbitmqVersion string = '3.13.7'

@description('Required. Output of `rmqbench broker-config --target azure`: rabbitmq.conf, written unchanged to /etc/rabbitmq/rabbitmq.conf.')
param rabbitmqConf string

@description('Required. Output of `rmqbench broker-config --target azure`: the enabled_plugins file, written unchanged.')
param enabledPluginsFile string

@description('Required. Output of `rmqbench broker-config --target azure`: JSON array of rabbitmqctl argument vectors (policies), run after the node has joined.')
param policyCommandsJson string

@description('Optional. User name of the RabbitMQ administrator created at boot.')
param rabbitmqAdminUsername string = 'rmqbench-admin'

@description('Required. Name of the Key Vault that holds the Erlang cookie and the admin password.')
param keyVaultName string

@description('Required. Name of the Key Vault secret that holds the Erlang cookie.')
param erlangCookieSecretName string

@description('Required. Name of the Key Vault secret that holds the RabbitMQ admin password.')
param adminPasswordSecretName string

@description('Optional. Port of the per-node health endpoint probed by the load balancer.')
@minValue(1024)
@maxValue(65535)
param healthProbePort int = 8081

var amqpPort = 5672
var managementPort = 15672
// RabbitMQ's conventional TLS ports: https://www.rabbitmq.com/docs/ssl (AMQPS 5671), https://www.rabbitmq.com/docs/management (HTTPS 15671).
var amqpsPort = 5671
var managementTlsPort = 15671
var backendPoolName = 'rabbitmq-nodes'
var probeName = 'rabbitmq-serving'
var frontendName = 'rabbitmq'
// Built-in roles: read the vault's secrets; read the resource group's VMs to find the peers.
var keyVaultSecretsUserRoleId = '4633458b-17de-408a-b874-0445c86b69e6'
var readerRoleId = 'acdd72a7-3385-48ef-bd42-f606fba81ae7'
var scaleSetName = '${namePrefix}-vmss'

// Settings of the node scripts (names and versions, no secret values).
var nodeEnvironment = 'KEY_VAULT_NAME=${keyVaultName}\nERLANG_COOKIE_SECRET_NAME=${erlangCookieSecretName}\nADMIN_PASSWORD_SECRET_NAME=${adminPasswordSecretName}\nRABBITMQ_ADMIN_USERNAME=${rabbitmqAdminUsername}\nRABBITMQ_VERSION=${rabbitmqVersion}\nIDENTITY_CLIENT_ID=${identity.properties.clientId}\nSCALE_SET_NAME=${scaleSetName}\nHEALTH_PORT=${healthProbePort}\nAMQP_PORT=${amqpPort}\nMANAGEMENT_PORT=${managementPort}\nTLS_CERTIFICATE_SECRET_NAME=${tlsEnabled ? tlsCertificateSecretName : ''}\nTLS_PRIVATE_KEY_SECRET_NAME=${tlsEnabled ? tlsPrivateKeySecretName : ''}\nAMQPS_PORT=${amqpsPort}\nMANAGEMENT_TLS_PORT=${managementTlsPort}\n'

// The broker texts come unchanged from core/broker/broker-config.ts (through the parameters); base64 keeps YAML quoting out of the way.
var cloudInitTemplate = loadTextContent('../cloud-init/cluster.yaml')
var cloudInitWithConf = replace(cloudInitTemplate, '{{RABBITMQ_CONF_B64}}', base64(rabbitmqConf))
var cloudInitWithPlugins = replace(cloudInitWithConf, '{{ENABLED_PLUGINS_B64}}', base64(enabledPluginsFile))
var cloudInitWithPolicies = replace(cloudInitWithPlugins, '{{POLICY_COMMANDS_B64}}', base64(policyCommandsJson))
var cloudInitWithEnvironment = replace(cloudInitWithPolicies, '{{NODE_ENV_B64}}', base64(nodeEnvironment))
var cloudInitWithSetup = replace(cloudInitWithEnvironment, '{{NODE_SETUP_B64}}', loadFileAsBase64('../cloud-init/rmqbench-node-setup.sh'))
var clusterCloudInit = replace(cloudInitWithSetup, '{{HEALTH_SERVER_B64}}', loadFileAsBase64('../cloud-init/rmqbench-health.py'))

// The internal load balancer forwards plain AMQP / management (and the TLS listeners when enabled) inside the VNet: the load
// generator's path. The public one, when asked for, forwards ONLY the TLS listeners: the admin password never crosses the
// internet in clear text. A scale set may sit behind one internal and one public load balancer
// (https://learn.microsoft.com/azure/load-balancer/load-balancer-common-deployment-errors, VMScaleSetCannotUseMultipleLoadBalancersOfSameType).
var publicPorts = [
  amqpsPort
  managementTlsPort
]
var plainPorts = [
  amqpPort
  managementPort
]
var internalPorts = tlsEnabled ? concat(plainPorts, publicPorts) : plainPorts
var internalLoadBalancerName = '${namePrefix}-lb'
var publicLoadBalancerName = '${namePrefix}-lb-public'

var internalLoadBalancingRules = [
  for port in internalPorts: {
    name: 'tcp-${port}'
    properties: {
      protocol: 'Tcp'
      frontendPort: port
      backendPort: port
      frontendIPConfiguration: {
        id: resourceId('Microsoft.Network/loadBalancers/frontendIPConfigurations', internalLoadBalancerName, frontendName)
      }
      backendAddressPool: {
        id: resourceId('Microsoft.Network/loadBalancers/backendAddressPools', internalLoadBalancerName, backendPoolName)
      }
      probe: {
        id: resourceId('Microsoft.Network/loadBalancers/probes', internalLoadBalancerName, probeName)
      }
      // Long-lived AMQP connections: the longest idle timeout, and a reset instead of a silent drop.
      idleTimeoutInMinutes: port == amqpPort || port == amqpsPort ? 30 : 4
      enableTcpReset: true
      enableFloatingIP: false
      loadDistribution: 'Default'
      disableOutboundSnat: true
    }
  }
]

var publicLoadBalancingRules = [
  for port in publicPorts: {
    name: 'tcp-${port}'
    properties: {
      protocol: 'Tcp'
      frontendPort: port
      backendPort: port
      frontendIPConfiguration: {
        id: resourceId('Microsoft.Network/loadBalancers/frontendIPConfigurations', publicLoadBalancerName, frontendName)
      }
      backendAddressPool: {
        id: resourceId('Microsoft.Network/loadBalancers/backendAddressPools', publicLoadBalancerName, backendPoolName)
      }
      probe: {
        id: resourceId('Microsoft.Network/loadBalancers/probes', publicLoadBalancerName, probeName)
      }
      idleTimeoutInMinutes: port == amqpsPort ? 30 : 4
      enableTcpReset: true
      enableFloatingIP: false
      loadDistribution: 'Default'
      disableOutboundSnat: true
    }
  }
]

// Every node NIC sits in the internal pool, and in the public pool when there is one.
var internalBackendPool = {
  id: resourceId('Microsoft.Network/loadBalancers/backendAddressPools', internalLoadBalancerName, backendPoolName)
}
var internalBackendPools = [
  internalBackendPool
]
var bothBackendPools = [
  internalBackendPool
  {
    id: resourceId('Microsoft.Network/loadBalancers/backendAddressPools', publicLoadBalancerName, backendPoolName)
  }
]

// 200 only when the node answers an AMQP handshake and the management listener, and has joined the cluster.
var healthProbe = {
  name: probeName
  properties: {
    protocol: 'Http'
    port: healthProbePort
    requestPath: '/healthz'
    intervalInSeconds: 5
    numberOfProbes: 2
    probeThreshold: 2
  }
}

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${namePrefix}-nodes-id'
  location: location
  tags: tags
}

resource keyVault 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: keyVaultName
}

// Assigned before the scale set exists, so that the first boot can already read the secrets.
resource secretsUserAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(keyVault.id, identity.id, keyVaultSecretsUserRoleId)
  scope: keyVault
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUserRoleId)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    description: 'RabbitMQ nodes read the Erlang cookie and the admin password at boot.'
  }
}

resource peerReaderAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(resourceGroup().id, identity.id, readerRoleId)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', readerRoleId)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    description: 'RabbitMQ nodes list the scale set\'s VMs to find the cluster they join.'
  }
}

resource publicIp 'Microsoft.Network/publicIPAddresses@2024-05-01' = if (publicLoadBalancer) {
  name: '${namePrefix}-lb-pip'
  location: location
  tags: tags
  zones: empty(availabilityZones) ? null : availabilityZones
  sku: {
    name: 'Standard'
    tier: 'Regional'
  }
  properties: {
    publicIPAllocationMethod: 'Static'
    publicIPAddressVersion: 'IPv4'
  }
}

resource loadBalancer 'Microsoft.Network/loadBalancers@2024-05-01' = {
  name: internalLoadBalancerName
  location: location
  tags: tags
  sku: {
    name: 'Standard'
    tier: 'Regional'
  }
  properties: {
    frontendIPConfigurations: [
      {
        name: frontendName
        zones: empty(availabilityZones) ? null : availabilityZones
        properties: {
          subnet: {
            id: subnetResourceId
          }
          privateIPAllocationMethod: 'Dynamic'
        }
      }
    ]
    backendAddressPools: [
      {
        name: backendPoolName
      }
    ]
    probes: [
      healthProbe
    ]
    loadBalancingRules: internalLoadBalancingRules
  }
}

resource publicLoadBalancerResource 'Microsoft.Network/loadBalancers@2024-05-01' = if (publicLoadBalancer) {
  name: publicLoadBalancerName
  location: location
  tags: tags
  sku: {
    name: 'Standard'
    tier: 'Regional'
  }
  properties: {
    frontendIPConfigurations: [
      {
        name: frontendName
        properties: {
          publicIPAddress: {
            id: publicIp.id
          }
        }
      }
    ]
    backendAddressPools: [
      {
        name: backendPoolName
      }
    ]
    probes: [
      healthProbe
    ]
    loadBalancingRules: publicLoadBalancingRules
  }
}

resource scaleSet 'Microsoft.Compute/virtualMachineScaleSets@2024-07-01' = {
  // checkov:skip=CKV_AZURE_97: encryption at host is a parameter (encryptionAtHost), off by default because it fails on subscriptions without the EncryptionAtHost feature registered; OS disks are still encrypted at rest with platform keys.
  // checkov:skip=CKV_AZURE_95: automatic OS image upgrades reimage nodes on the platform's schedule, which would wipe a broker node in the middle of a benchmark; the cluster is short-lived and rebuilt from the latest image on each deployment.
  name: scaleSetName
  location: location
  tags: tags
  zones: empty(availabilityZones) ? null : availabilityZones
  sku: {
    name: vmSize
    tier: 'Standard'
    capacity: instanceCount
  }
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identity.id}': {}
    }
  }
  properties: {
    orchestrationMode: 'Flexible'
    platformFaultDomainCount: 1
    singlePlacementGroup: false
    virtualMachineProfile: {
      osProfile: {
        computerNamePrefix: namePrefix
        adminUsername: adminUsername
        customData: base64(clusterCloudInit)
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
          diskSizeGB: osDiskSizeGB
          deleteOption: 'Delete'
          managedDisk: {
            storageAccountType: 'Premium_LRS'
          }
        }
      }
      networkProfile: {
        networkApiVersion: '2020-11-01'
        networkInterfaceConfigurations: [
          {
            name: '${namePrefix}-nic'
            properties: {
              primary: true
              enableAcceleratedNetworking: acceleratedNetworking
              deleteOption: 'Delete'
              ipConfigurations: [
                {
                  name: 'ipconfig'
                  properties: {
                    primary: true
                    privateIPAddressVersion: 'IPv4'
                    subnet: {
                      id: subnetResourceId
                    }
                    loadBalancerBackendAddressPools: publicLoadBalancer ? bothBackendPools : internalBackendPools
                  }
                }
              ]
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
  dependsOn: [
    secretsUserAssignment
    peerReaderAssignment
    // The NIC names the pools by resourceId(), which implies no dependency.
    loadBalancer
    publicLoadBalancerResource
  ]
}

@description('The name of the scale set.')
output name string = scaleSet.name

@description('The resource ID of the scale set.')
output resourceId string = scaleSet.id

@description('The resource ID of the internal load balancer.')
output loadBalancerResourceId string = loadBalancer.id

@description('The resource ID of the public load balancer (TLS listeners only); empty when publicLoadBalancer is false.')
output publicLoadBalancerResourceId string = publicLoadBalancer ? publicLoadBalancerResource.id : ''

@description('AMQP endpoint of the cluster through the internal load balancer (inside the VNet: the load generator\'s path).')
output amqpEndpoint string = 'amqp://${loadBalancer.properties.frontendIPConfigurations[0].properties.privateIPAddress}:${amqpPort}'

@description('Management UI/API URL of the cluster through the internal load balancer (inside the VNet).')
output managementUrl string = 'http://${loadBalancer.properties.frontendIPConfigurations[0].properties.privateIPAddress}:${managementPort}'

@description('AMQPS endpoint of the cluster: through the public load balancer when there is one, else the internal one; empty without TLS.')
output amqpsEndpoint string = tlsEnabled ? 'amqps://${publicLoadBalancer ? publicIp.properties.ipAddress : loadBalancer.properties.frontendIPConfigurations[0].properties.privateIPAddress}:${amqpsPort}' : ''

@description('Management API over HTTPS: through the public load balancer when there is one, else the internal one; empty without TLS.')
output managementHttpsUrl string = tlsEnabled ? 'https://${publicLoadBalancer ? publicIp.properties.ipAddress : loadBalancer.properties.frontendIPConfigurations[0].properties.privateIPAddress}:${managementTlsPort}' : ''

@description('The principal ID of the nodes\' user-assigned identity.')
output identityPrincipalId string = identity.properties.principalId
