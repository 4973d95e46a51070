metadata name = 'rmqbench Azure cluster'
metadata description = 'A highly available RabbitMQ cluster on a Flexible VM Scale Set behind a Standard load balancer, and a PerfTest load generator. Broker configuration comes from core/broker/broker-config.ts.'

targetScope = 'resourceGroup'

// The shared user-defined types (types.bicep), imported at compile time:
// https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-import
import { availabilityZoneType, natsSyncIntervalType, tagsType } from 'types.bicep'

@description('Optional. Prefix of every resource name (lower-case letters and digits; also the prefix of the node host names).')
@minLength(3)
@maxLength(12)
param namePrefix string = 'rmqbench'

@description('Optional. Location of every resource. Defaults to the resource group location.')
param location string = resourceGroup().location

@description('Optional. Tags applied to every resource: tag names with string values (tagsType).')
param tags tagsType = {}

@description('Optional. The broker the cluster runs: RabbitMQ nodes on a scale set (modules/cluster.bicep), or Apache Kafka brokers in KRaft mode with static private IPs (modules/kafka-cluster.bicep), or a NATS JetStream cluster with static private IPs (modules/nats-cluster.bicep), of clusterVmSize, instanceCount and availabilityZones alike. With kafka or nats the broker texts (rabbitmqConf, enabledPluginsFile, policyCommandsJson) and the RabbitMQ secrets (rabbitmqAdminPassword, erlangCookie) may be left out, and the vault gets no RabbitMQ secret; TLS is still taken but unused by the brokers, and publicLoadBalancer must stay false.')
@allowed([
  'rabbitmq'
  'kafka'
  'nats'
])
param broker string = 'rabbitmq'

@description('Optional. With broker nats: JetStream\'s sync_interval on every server (natsSyncIntervalType), a duration or \'always\' to fsync after every write; unused otherwise.')
param natsSyncInterval natsSyncIntervalType = '2m'

@description('Optional. VM size of the RabbitMQ nodes. Every allowed size supports accelerated networking on its NIC; the Dsv5 and Esv5 sizes require it (acceleratedNetworking must stay true).')
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
param clusterVmSize string = 'Standard_D2s_v5'

@description('Optional. Number of RabbitMQ nodes (scale set capacity).')
@minValue(1)
@maxValue(7)
param instanceCount int = 3

@description('Optional. Availability zones the nodes are spread over, as strings (\'1\', \'2\', \'3\'; availabilityZoneType). Empty for regions without zones.')
param availabilityZones availabilityZoneType[] = [
  '1'
  '2'
  '3'
]

@description('Optional. Accelerated networking on every NIC. The thesis measured up to 660% more throughput with it on. Dsv5 and Esv5 sizes require it: false is refused when clusterVmSize or loadGeneratorVmSize is one of them.')
param acceleratedNetworking bool = true

@description('Optional. Encryption at host for every disk. Needs the EncryptionAtHost feature registered on the subscription.')
param encryptionAtHost bool = false

@description('Optional. Give the load balancer a public IP. It then serves only AMQPS 5671 and management HTTPS 15671 (tlsCertificatePem and tlsPrivateKeyPem are required). False keeps AMQP and management inside the VNet.')
param publicLoadBalancer bool = false

@description('Required. Source address prefixes allowed to reach the cluster through the load balancer, in addition to the load-generator subnet (e.g. your own address as x.x.x.x/32): AMQPS 5671 and management HTTPS 15671 when publicLoadBalancer is true, else AMQP 5672 and management 15672 (and the TLS ports when a certificate is given). No default; "*", "Internet", "Any", "AzureCloud[.<region>]" and prefixes shorter than /8 (0.0.0.0/0, ::/0, ...) are refused.')
@minLength(1)
param allowedSourceAddressPrefixes string[]

@description('Optional. PEM certificate of the TLS listeners (AMQPS 5671, management HTTPS 15671). Public: stored in Key Vault for the nodes and returned as the tlsCertificatePem output, which clients pin. Required when publicLoadBalancer is true.')
param tlsCertificatePem string = ''

@description('Optional. PEM private key of tlsCertificatePem. Goes to Key Vault only; never in customData or outputs. Required when publicLoadBalancer is true.')
@secure()
param tlsPrivateKeyPem string = ''

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

@description('Optional. Required when broker is rabbitmq (refused empty then); unused with kafka. Output of `rmqbench broker-config --target azure ...`: the rabbitmq.conf every node uses, unchanged.')
param rabbitmqConf string = ''

@description('Optional. Required when broker is rabbitmq (refused empty then); unused with kafka. Output of `rmqbench broker-config --target azure ...`: the enabled_plugins file, unchanged.')
param enabledPluginsFile string = ''

@description('Optional. Required when broker is rabbitmq (refused empty then); unused with kafka. Output of `rmqbench broker-config --target azure ...`: JSON array of rabbitmqctl argument vectors for the policies ("[]" for none).')
param policyCommandsJson string = ''

@description('Optional. User name of the RabbitMQ administrator.')
param rabbitmqAdminUsername string = 'rmqbench-admin'

@description('Optional. Required when broker is rabbitmq (refused by name when shorter than 12 characters then); unused with kafka, which creates no such secret. Password of the RabbitMQ administrator. Goes to Key Vault only; never in customData or outputs.')
@secure()
param rabbitmqAdminPassword string = ''

@description('Optional. Required when broker is rabbitmq (refused by name when shorter than 20 characters then); unused with kafka, which creates no such secret. Erlang cookie shared by the nodes. Goes to Key Vault only; never in customData or outputs.')
@secure()
param erlangCookie string = ''

@description('Optional. Purge protection on the Key Vault (irreversible; reserves the vault name after teardown).')
param keyVaultPurgeProtection bool = false

@description('Optional. VM size of the load generator. The thesis used an F16s (Table 5.4).')
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
param loadGeneratorVmSize string = 'Standard_F16s_v2'

@description('Optional. Availability zone of the load generator. Empty for no zone.')
param loadGeneratorZone string = '1'

@description('Optional. Number of load generator VMs (modules/loadgen.bicep), all in loadGeneratorZone: 1 to 10, the plan\'s bound. The benchmark controller deploys the plan cluster\'s loadGenerators (leaving the default, 1, for one) and runs one Run Command on each VM of loadGeneratorResourceIds.')
@minValue(1)
@maxValue(10)
param loadGeneratorCount int = 1

@description('Optional. PerfTest version installed on the load generator (pinned with checksums).')
@allowed([
  '2.22.1'
])
param perfTestVersion string = '2.22.1'

@description('Optional. Name of an existing storage account in this resource group the load generator identity may write results to. Empty: results go through pre-signed URLs only.')
param resultsStorageAccountName string = ''

@description('Optional. Object id (not the client id) of a fault-only service principal: it gets Virtual Machine Contributor on this resource group only, so that the benchmark controller\'s fault step, running as that principal, reaches this run\'s VMs and no others. Empty: no assignment (the fault step runs as the deploying principal).')
param faultPrincipalId string = ''

var keyVaultName = 'kv${uniqueString(resourceGroup().id, namePrefix)}'

// Virtual Machine Contributor: Microsoft.Compute/virtualMachines/* (runCommands and the VM list included)
// (https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/compute#virtual-machine-contributor).
var virtualMachineContributorRoleId = '9980e02c-c2be-4d73-94e8-173b1dc7cf3c'

// World-open source prefixes are refused here as in core/cloud/source-prefixes.ts (the controller's check); test/bicep keeps the two in step.
// fail() stops the deployment with this message; it may only stand in a short-circuiting expression (?:, ??):
// https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-flow-control
// `*`, `Internet`, `Any` admit everyone; AzureCloud[.<region>] admits every Azure customer's VMs:
// https://learn.microsoft.com/azure/virtual-network/service-tags-overview
var worldOpenSourceNames = [
  '*'
  'internet'
  'any'
  'azurecloud'
]
var minimumSourcePrefixLength = 8
var worldOpenSourcePrefixes = filter(allowedSourceAddressPrefixes, prefix => contains(worldOpenSourceNames, toLower(trim(prefix))) || startsWith(toLower(trim(prefix)), 'azurecloud.') || int(contains(prefix, '/') ? last(split(prefix, '/')) : '32') < minimumSourcePrefixLength)
var checkedSourcePrefixes = empty(worldOpenSourcePrefixes) ? allowedSourceAddressPrefixes : fail('allowedSourceAddressPrefixes must not open the cluster to the world; refused: ${join(worldOpenSourcePrefixes, ', ')}. Give the addresses that need the cluster, e.g. your own address as x.x.x.x/32 (prefixes of /8 or longer).')

// The client ports a source may reach: plain AMQP / management, or their TLS listeners (https://www.rabbitmq.com/docs/ssl,
// https://www.rabbitmq.com/docs/management#single-listener-https: 5671 and 15671 are the conventional TLS ports).
var plainClientPorts = [
  '5672'
  '15672'
]
var tlsClientPorts = [
  '5671'
  '15671'
]

// Both TLS parameters or neither; both when the load balancer is public (it serves only TLS).
var tlsGiven = !empty(tlsCertificatePem) && !empty(tlsPrivateKeyPem)
var tlsEnabled = publicLoadBalancer && !tlsGiven ? fail('publicLoadBalancer is true, so tlsCertificatePem and tlsPrivateKeyPem are required: the public frontend serves only AMQPS 5671 and management HTTPS 15671.') : empty(tlsCertificatePem) != empty(tlsPrivateKeyPem) ? fail('tlsCertificatePem and tlsPrivateKeyPem go together: give both (TLS listeners on 5671 and 15671) or neither.') : tlsGiven

// Dsv5 and Esv5 sizes require accelerated networking: https://learn.microsoft.com/azure/virtual-machines/dv5-dsv5-series,
// https://learn.microsoft.com/azure/virtual-machines/ev5-esv5-series ("Accelerated networking is required")
// ("Accelerated Networking: Required"); the Fsv2 sizes allowed here support it on their single NIC:
// https://learn.microsoft.com/azure/virtual-machines/fsv2-series ("Accelerated Networking: Supported"). Standard_F2s_v2 is left
// out: the same page restricts it ("Accelerated networking can only be applied to a single NIC", footnote 4), the one size here
// where the toggle would not mean the same thing as on the others.
// A Kafka cluster has no load balancer: its clients reach each broker at its advertised private IP.
var publicLoadBalancerChecked = broker != 'rabbitmq' && publicLoadBalancer ? fail('publicLoadBalancer is true, but broker is ${broker}: its clients reach each server at its private IP, and there is no load balancer to make public.') : publicLoadBalancer

// The broker texts are required for RabbitMQ only (a Kafka launch sends none): refused empty when broker is rabbitmq, so that
// path behaves as when they were required parameters. fail() may only stand in a short-circuiting expression:
// https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-flow-control
var rabbitmqConfChecked = broker == 'rabbitmq' && empty(rabbitmqConf) ? fail('broker is rabbitmq, so rabbitmqConf is required: give the output of `rmqbench broker-config --target azure ...`.') : rabbitmqConf
var enabledPluginsFileChecked = broker == 'rabbitmq' && empty(enabledPluginsFile) ? fail('broker is rabbitmq, so enabledPluginsFile is required: give the output of `rmqbench broker-config --target azure ...`.') : enabledPluginsFile
var policyCommandsJsonChecked = broker == 'rabbitmq' && empty(policyCommandsJson) ? fail('broker is rabbitmq, so policyCommandsJson is required: give the output of `rmqbench broker-config --target azure ...` ("[]" for no policies).') : policyCommandsJson

// The RabbitMQ secrets, likewise required for RabbitMQ only: refused by name (never by value) when broker is rabbitmq and one is
// missing or shorter than the @minLength it had as a required parameter; with kafka the vault gets neither secret. The
// empty default of a @secure() parameter is the one the linter allows besides newGuid()
// (https://learn.microsoft.com/azure/azure-resource-manager/bicep/linter-rule-secure-parameter-default). The check yields a
// bool, so the values themselves still reach only the secrets module's @secure() parameters.
var rabbitmqSecretsChecked = broker != 'rabbitmq' ? false : length(rabbitmqAdminPassword) < 12 ? fail('broker is rabbitmq, so rabbitmqAdminPassword is required: at least 12 characters (the RabbitMQ administrator\'s password, stored in Key Vault only).') : length(erlangCookie) < 20 ? fail('broker is rabbitmq, so erlangCookie is required: at least 20 characters (the Erlang cookie the nodes share, stored in Key Vault only).') : true

var acceleratedNetworkingChecked = !acceleratedNetworking && (endsWith(clusterVmSize, 's_v5') || endsWith(loadGeneratorVmSize, 's_v5')) ? fail('acceleratedNetworking is false, but ${endsWith(clusterVmSize, 's_v5') ? clusterVmSize : loadGeneratorVmSize} is a Dsv5 or Esv5 size, which requires accelerated networking: set acceleratedNetworking to true or choose an Fsv2 size.') : acceleratedNetworking

// The Kafka brokers' and NATS servers' static IPs: from the modules' host 99 (.100) where the cluster subnet holds it (a
// /25 or larger, as the default /24); in a smaller subnet, which in a Kafka or NATS deployment holds only them (no
// RabbitMQ node, no load balancer), from host 3 (.4), the first address Azure lets a NIC take: it reserves a subnet's
// first four addresses and its last (https://learn.microsoft.com/azure/virtual-network/virtual-networks-faq, "Are there
// any restrictions on using IP addresses within these subnets?"). A host past the range would fail the deployment at
// cidrHost or at the NIC (a static IP outside its subnet). A /29, Azure's smallest subnet, holds three brokers.
var clusterSubnetBits = int(last(split(clusterSubnetPrefix, '/')))
var brokerFirstHostNumber = broker != 'rabbitmq' && clusterSubnetBits >= 29 && instanceCount > 3 ? fail('clusterSubnetPrefix ${clusterSubnetPrefix} has room for 3 ${broker} static addresses (Azure reserves 5 of a /29\'s 8), not instanceCount ${instanceCount}: give a /28 or larger.') : clusterSubnetBits <= 25 ? 99 : 3

module network 'modules/network.bicep' = {
  name: '${deployment().name}-network'
  params: {
    namePrefix: namePrefix
    location: location
    tags: tags
    addressPrefix: vnetAddressPrefix
    clusterSubnetPrefix: clusterSubnetPrefix
    loadGeneratorSubnetPrefix: loadGeneratorSubnetPrefix
    allowedSourceAddressPrefixes: checkedSourcePrefixes
    allowedSourcePorts: publicLoadBalancer ? tlsClientPorts : tlsEnabled ? concat(plainClientPorts, tlsClientPorts) : plainClientPorts
  }
}

module secrets 'modules/secrets.bicep' = {
  name: '${deployment().name}-secrets'
  params: {
    keyVaultName: keyVaultName
    location: location
    tags: tags
    rabbitmqSecretsEnabled: rabbitmqSecretsChecked
    erlangCookie: erlangCookie
    rabbitmqAdminPassword: rabbitmqAdminPassword
    allowedSubnetResourceIds: [
      network.outputs.clusterSubnetResourceId
      network.outputs.loadGeneratorSubnetResourceId
    ]
    tlsCertificatePem: tlsCertificatePem
    tlsPrivateKeyPem: tlsPrivateKeyPem
    enablePurgeProtection: keyVaultPurgeProtection
  }
}

module cluster 'modules/cluster.bicep' = if (broker == 'rabbitmq') {
  name: '${deployment().name}-cluster'
  params: {
    namePrefix: namePrefix
    location: location
    tags: tags
    subnetResourceId: network.outputs.clusterSubnetResourceId
    vmSize: clusterVmSize
    instanceCount: instanceCount
    availabilityZones: availabilityZones
    acceleratedNetworking: acceleratedNetworkingChecked
    encryptionAtHost: encryptionAtHost
    publicLoadBalancer: publicLoadBalancerChecked
    tlsEnabled: tlsEnabled
    tlsCertificateSecretName: secrets.outputs.tlsCertificateSecretName
    tlsPrivateKeySecretName: secrets.outputs.tlsPrivateKeySecretName
    adminUsername: adminUsername
    adminSshPublicKey: adminSshPublicKey
    rabbitmqVersion: rabbitmqVersion
    rabbitmqConf: rabbitmqConfChecked
    enabledPluginsFile: enabledPluginsFileChecked
    policyCommandsJson: policyCommandsJsonChecked
    rabbitmqAdminUsername: rabbitmqAdminUsername
    keyVaultName: secrets.outputs.name
    erlangCookieSecretName: secrets.outputs.erlangCookieSecretName
    adminPasswordSecretName: secrets.outputs.adminPasswordSecretName
  }
}

// Kafka brokers in the cluster subnet, each with a static private IP (its advertised listener), PLAINTEXT inside the VNet:
// the NSG's rules name only RabbitMQ's ports, so 9092/9093 fall to Azure's default AllowVnetInBound
// (https://learn.microsoft.com/azure/virtual-network/network-security-groups-overview#default-security-rules) and the
// default DenyAllInBound keeps them from the internet.
module kafkaCluster 'modules/kafka-cluster.bicep' = if (broker == 'kafka') {
  name: '${deployment().name}-kafka'
  params: {
    namePrefix: namePrefix
    location: location
    tags: tags
    subnetResourceId: network.outputs.clusterSubnetResourceId
    subnetAddressPrefix: clusterSubnetPrefix
    firstHostNumber: brokerFirstHostNumber
    vmSize: clusterVmSize
    brokerCount: instanceCount
    availabilityZones: availabilityZones
    acceleratedNetworking: acceleratedNetworkingChecked
    encryptionAtHost: encryptionAtHost
    adminUsername: adminUsername
    adminSshPublicKey: adminSshPublicKey
  }
}

// NATS servers in the cluster subnet, each with a static private IP its routes name, without authentication inside the
// VNet: the NSG (modules/network.bicep) lets the load-generator subnet reach the client port 4222 as it reaches 5672, and
// the route (6222) and monitoring (8222) ports only from the cluster subnet.
module natsCluster 'modules/nats-cluster.bicep' = if (broker == 'nats') {
  name: '${deployment().name}-nats'
  params: {
    namePrefix: namePrefix
    location: location
    tags: tags
    subnetResourceId: network.outputs.clusterSubnetResourceId
    subnetAddressPrefix: clusterSubnetPrefix
    firstHostNumber: brokerFirstHostNumber
    vmSize: clusterVmSize
    serverCount: instanceCount
    availabilityZones: availabilityZones
    acceleratedNetworking: acceleratedNetworkingChecked
    encryptionAtHost: encryptionAtHost
    adminUsername: adminUsername
    adminSshPublicKey: adminSshPublicKey
    syncInterval: natsSyncInterval
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
    loadGeneratorCount: loadGeneratorCount
    acceleratedNetworking: acceleratedNetworkingChecked
    encryptionAtHost: encryptionAtHost
    adminUsername: adminUsername
    adminSshPublicKey: adminSshPublicKey
    perfTestVersion: perfTestVersion
    natsTools: broker == 'nats'
    keyVaultName: secrets.outputs.name
    resultsStorageAccountName: resultsStorageAccountName
  }
}

// The fault-only principal's right to run commands, on this run's resource group. Not on the scale set: a Flexible
// scale set's VMs are top-level Microsoft.Compute/virtualMachines resources (their ids are not under the scale set's),
// and a role assignment applies to its scope and the scopes below it
// (https://learn.microsoft.com/azure/role-based-access-control/scope-overview), so one on the scale set would not reach
// them; the VMs' names are chosen by the scale set, so they cannot be assigned one by one here either.
resource faultRunCommandAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(faultPrincipalId)) {
  name: guid(resourceGroup().id, faultPrincipalId, virtualMachineContributorRoleId)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', virtualMachineContributorRoleId)
    principalId: faultPrincipalId
    principalType: 'ServicePrincipal'
    description: 'The benchmark controller\'s fault step runs Run Commands on this run\'s VMs only.'
  }
}

@description('AMQP endpoint of the cluster through the load balancer, e.g. amqp://10.20.1.4:5672.')
output amqpEndpoint string = broker == 'rabbitmq' ? cluster.outputs.amqpEndpoint : ''

@description('Management UI/API URL of the cluster through the load balancer.')
output managementUrl string = broker == 'rabbitmq' ? cluster.outputs.managementUrl : ''

@description('AMQPS endpoint through the load balancer (amqps://<address>:5671), pinned to tlsCertificatePem; empty without TLS.')
output amqpsEndpoint string = broker == 'rabbitmq' ? cluster.outputs.amqpsEndpoint : ''

@description('Management API over HTTPS through the load balancer (https://<address>:15671), pinned to tlsCertificatePem; empty without TLS.')
output managementHttpsUrl string = broker == 'rabbitmq' ? cluster.outputs.managementHttpsUrl : ''

@description('The TLS listeners\' certificate as given (PEM, public: the key stays in Key Vault). Clients pin it; empty without TLS.')
output tlsCertificatePem string = tlsCertificatePem

@description('The name of the Key Vault secret holding the TLS certificate (empty without TLS).')
output tlsCertificateSecretName string = secrets.outputs.tlsCertificateSecretName

@description('The name of the Key Vault secret holding the TLS private key (the name, not the value; empty without TLS).')
output tlsPrivateKeySecretName string = secrets.outputs.tlsPrivateKeySecretName

@description('The resource ID of the RabbitMQ scale set.')
output scaleSetResourceId string = broker == 'rabbitmq' ? cluster.outputs.resourceId : ''

@description('The resource ID of the load generator VM.')
output loadGeneratorResourceId string = loadGenerator.outputs.resourceId

@description('The resource IDs of every load generator VM, in order (the first is loadGeneratorResourceId): one Run Command on each.')
output loadGeneratorResourceIds array = loadGenerator.outputs.loadGeneratorVmIds

@description('The resource IDs of the Kafka broker VMs, one per broker in broker order (IngestRepetition reads each one\'s Azure Monitor platform metrics); empty when broker is rabbitmq (its nodes are the scale set of scaleSetResourceId).')
output kafkaBrokerResourceIds array = broker == 'kafka' ? kafkaCluster.outputs.brokerResourceIds : []

@description('The VM size of every cluster VM (the RabbitMQ scale set\'s and the Kafka brokers\'): IngestRepetition derives used memory from its memory and Azure Monitor\'s "Available Memory Bytes".')
output clusterVmSize string = clusterVmSize

@description('The VM size of the load generator: IngestRepetition derives its used memory from its memory and Azure Monitor\'s "Available Memory Bytes".')
output loadGeneratorVmSize string = loadGeneratorVmSize

@description('The resource ID of the load balancer.')
output loadBalancerResourceId string = broker == 'rabbitmq' ? cluster.outputs.loadBalancerResourceId : ''

@description('The name of the Key Vault holding the Erlang cookie and the admin password (with broker rabbitmq).')
output keyVaultName string = secrets.outputs.name

@description('The name of the Key Vault secret holding the RabbitMQ admin password (the name, not the value): the load generator reads it from `keyVaultName` at run time. Empty when broker is kafka (no such secret).')
#disable-next-line outputs-should-not-contain-secrets // a secret's name, not its value: the linter flags the word "password" in the output name (https://learn.microsoft.com/azure/azure-resource-manager/bicep/linter-rule-outputs-should-not-contain-secrets)
output adminPasswordSecretName string = secrets.outputs.adminPasswordSecretName

@description('The client ID of the load generator\'s user-assigned identity, which may read `adminPasswordSecretName` (Key Vault Secrets User).')
output loadGeneratorIdentityClientId string = loadGenerator.outputs.identityClientId

@description('Kafka bootstrap.servers (the brokers\' static private IPs, port 9092, PLAINTEXT inside the VNet); empty when broker is rabbitmq.')
output kafkaBootstrapServers string = broker == 'kafka' ? kafkaCluster.outputs.bootstrapServers : ''

@description('NATS client URLs (the servers\' static private IPs, port 4222, no authentication inside the VNet); empty unless broker is nats.')
output natsServerUrls string = broker == 'nats' ? natsCluster.outputs.serverUrls : ''

@description('The resource IDs of the NATS server VMs, in index order; empty unless broker is nats.')
output natsServerResourceIds array = broker == 'nats' ? natsCluster.outputs.serverResourceIds : []
