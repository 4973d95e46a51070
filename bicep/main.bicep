metadata name = 'rmqbench Azure cluster'
metadata description = 'A highly available RabbitMQ cluster on a Flexible VM Scale Set behind a Standard load balancer, and a PerfTest load generator. Broker configuration comes from core/broker-config.ts.'

targetScope = 'resourceGroup'

@description('Optional. Prefix of every resource name (lower-case letters and digits; also the prefix of the node host names).')
@minLength(3)
@maxLength(12)
param namePrefix string = 'rmqbench'

@description('Optional. Location of every resource. Defaults to the resource group location.')
param location string = resourceGroup().location

@description('Optional. Tags applied to every resource.')
param tags object = {}

@description('Optional. VM size of the RabbitMQ nodes. Every allowed size supports accelerated networking.')
@allowed([
  'Standard_D2s_v5'
  'Standard_D4s_v5'
  'Standard_D8s_v5'
  'Standard_D16s_v5'
  'Standard_F2s_v2'
  'Standard_F4s_v2'
  'Standard_F8s_v2'
  'Standard_F16s_v2'
  'Standard_F32s_v2'
])
param clusterVmSize string = 'Standard_D2s_v5'

@description('Optional. Number of RabbitMQ nodes (scale set capacity).')
@minValue(1)
@maxValue(7)
param instanceCount int = 3

@description('Optional. Availability zones the nodes are spread over. Empty for regions without zones.')
param availabilityZones array = [
  '1'
  '2'
  '3'
]

@description('Optional. Accelerated networking on every NIC. The thesis measured up to 660% more throughput with it on.')
param acceleratedNetworking bool = true

@description('Optional. Encryption at host for every disk. Needs the EncryptionAtHost feature registered on the subscription.')
param encryptionAtHost bool = false

@description('Optional. Give the load balancer a public IP. False keeps AMQP and management inside the VNet.')
param publicLoadBalancer bool = false

@description('Required. Source address prefixes allowed to reach AMQP 5672/5671 and management 15672, in addition to the load-generator subnet (e.g. your own address as x.x.x.x/32). No default, and never "*".')
@minLength(1)
param allowedSourceAddressPrefixes array

@description('Optional. Address space of the virtual network.')
param vnetAddressPrefix string = '10.20.0.0/16'

@description('Optional. Address prefix of the cluster subnet.')
param clusterSubnetPrefix string = '10.20.1.0/24'

@description('Optional. Address prefix of the load-generator subnet.')
param loadGeneratorSubnetPrefix string = '10.20.2.0/24'

@description('Optional. Administrator user name of every VM.')
param adminUsername string = 'rmqbench'

@description('Required. SSH public key of the administrator (password login is disabled; no inbound SSH from the internet).')
param adminSshPublicKey string

@description('Optional. RabbitMQ version installed on the nodes (full version from the Team RabbitMQ apt repository). Classic mirroring needs 3.x.')
param rabbitmqVersion string = '3.13.7'

@description('Required. Output of `rmqbench broker-config --target azure ...`: the rabbitmq.conf every node uses, unchanged.')
param rabbitmqConf string

@description('Required. Output of `rmqbench broker-config --target azure ...`: the enabled_plugins file, unchanged.')
param enabledPluginsFile string

@description('Required. Output of `rmqbench broker-config --target azure ...`: JSON array of rabbitmqctl argument vectors for the policies ("[]" for none).')
param policyCommandsJson string

@description('Optional. User name of the RabbitMQ administrator.')
param rabbitmqAdminUsername string = 'rmqbench-admin'

@description('Required. Password of the RabbitMQ administrator. Goes to Key Vault only; never in customData or outputs.')
@secure()
@minLength(12)
param rabbitmqAdminPassword string

@description('Required. Erlang cookie shared by the nodes. Goes to Key Vault only; never in customData or outputs.')
@secure()
@minLength(20)
param erlangCookie string

@description('Optional. Expiry of the Key Vault secrets, in seconds since the Unix epoch. Defaults to 90 days after the deployment.')
param secretExpiryEpoch int = dateTimeToEpoch(dateTimeAdd(utcNow(), 'P90D'))

@description('Optional. Purge protection on the Key Vault (irreversible; reserves the vault name after teardown).')
param keyVaultPurgeProtection bool = false

@description('Optional. VM size of the load generator. The thesis used an F16s (Table 5.4).')
@allowed([
  'Standard_D2s_v5'
  'Standard_D4s_v5'
  'Standard_D8s_v5'
  'Standard_D16s_v5'
  'Standard_F2s_v2'
  'Standard_F4s_v2'
  'Standard_F8s_v2'
  'Standard_F16s_v2'
  'Standard_F32s_v2'
])
param loadGeneratorVmSize string = 'Standard_F16s_v2'

@description('Optional. Availability zone of the load generator. Empty for no zone.')
param loadGeneratorZone string = '1'

@description('Optional. PerfTest version installed on the load generator (pinned with checksums).')
@allowed([
  '2.22.1'
])
param perfTestVersion string = '2.22.1'

@description('Optional. Name of an existing storage account in this resource group the load generator identity may write results to. Empty: results go through pre-signed URLs only.')
param resultsStorageAccountName string = ''

var keyVaultName = 'kv${uniqueString(resourceGroup().id, namePrefix)}'
// The load generator always reaches AMQP and management.
var clientSourcePrefixes = union(allowedSourceAddressPrefixes, [
  loadGeneratorSubnetPrefix
])

module network 'modules/network.bicep' = {
  name: '${deployment().name}-network'
  params: {
    namePrefix: namePrefix
    location: location
    tags: tags
    addressPrefix: vnetAddressPrefix
    clusterSubnetPrefix: clusterSubnetPrefix
    loadGeneratorSubnetPrefix: loadGeneratorSubnetPrefix
    allowedSourceAddressPrefixes: clientSourcePrefixes
  }
}

module secrets 'modules/secrets.bicep' = {
  name: '${deployment().name}-secrets'
  params: {
    keyVaultName: keyVaultName
    location: location
    tags: tags
    erlangCookie: erlangCookie
    rabbitmqAdminPassword: rabbitmqAdminPassword
    allowedSubnetResourceIds: [
      network.outputs.clusterSubnetResourceId
      network.outputs.loadGeneratorSubnetResourceId
    ]
    secretExpiryEpoch: secretExpiryEpoch
    enablePurgeProtection: keyVaultPurgeProtection
  }
}

module cluster 'modules/cluster.bicep' = {
  name: '${deployment().name}-cluster'
  params: {
    namePrefix: namePrefix
    location: location
    tags: tags
    subnetResourceId: network.outputs.clusterSubnetResourceId
    vmSize: clusterVmSize
    instanceCount: instanceCount
    availabilityZones: availabilityZones
    acceleratedNetworking: acceleratedNetworking
    encryptionAtHost: encryptionAtHost
    publicLoadBalancer: publicLoadBalancer
    adminUsername: adminUsername
    adminSshPublicKey: adminSshPublicKey
    rabbitmqVersion: rabbitmqVersion
    rabbitmqConf: rabbitmqConf
    enabledPluginsFile: enabledPluginsFile
    policyCommandsJson: policyCommandsJson
    rabbitmqAdminUsername: rabbitmqAdminUsername
    keyVaultName: secrets.outputs.name
    erlangCookieSecretName: secrets.outputs.erlangCookieSecretName
    adminPasswordSecretName: secrets.outputs.adminPasswordSecretName
  }
}

module loadGenerator 'modules/loadgen.bicep' = {
  name: '${deployment().name}-loadgen'
  params: {
    namePrefix: namePrefix
    location: location
    tags: tags
    subnetResourceId: network.outputs.loadGeneratorSubnetResourceId
    vmSize: loadGeneratorVmSize
    availabilityZone: loadGeneratorZone
    acceleratedNetworking: acceleratedNetworking
    encryptionAtHost: encryptionAtHost
    adminUsername: adminUsername
    adminSshPublicKey: adminSshPublicKey
    perfTestVersion: perfTestVersion
    keyVaultName: secrets.outputs.name
    resultsStorageAccountName: resultsStorageAccountName
  }
}

@description('AMQP endpoint of the cluster through the load balancer, e.g. amqp://10.20.1.4:5672.')
output amqpEndpoint string = cluster.outputs.amqpEndpoint

@description('Management UI/API URL of the cluster through the load balancer.')
output managementUrl string = cluster.outputs.managementUrl

@description('The resource ID of the RabbitMQ scale set.')
output scaleSetResourceId string = cluster.outputs.resourceId

@description('The resource ID of the load generator VM.')
output loadGeneratorResourceId string = loadGenerator.outputs.resourceId

@description('The resource ID of the load balancer.')
output loadBalancerResourceId string = cluster.outputs.loadBalancerResourceId

@description('The name of the Key Vault holding the Erlang cookie and the admin password.')
output keyVaultName string = secrets.outputs.name

@description('The name of the Key Vault secret holding the RabbitMQ admin password (the name, not the value): the load generator reads it from `keyVaultName` at run time.')
output adminPasswordSecretName string = secrets.outputs.adminPasswordSecretName

@description('The client ID of the load generator\'s user-assigned identity, which may read `adminPasswordSecretName` (Key Vault Secrets User).')
output loadGeneratorIdentityClientId string = loadGenerator.outputs.identityClientId
