metadata name = 'rmqbench secrets'
metadata description = 'Key Vault (RBAC, firewalled to the cluster and load-generator subnets) holding the Erlang cookie and the RabbitMQ admin password (unless rabbitmqSecretsEnabled is false) and, when given, the TLS certificate and key.'

// The shared user-defined types (../types.bicep), imported at compile time:
// https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-import
import { tagsType } from '../types.bicep'

@description('Required. Name of the Key Vault (3-24 characters, globally unique).')
@minLength(3)
@maxLength(24)
param keyVaultName string

@description('Optional. Location of the vault. Defaults to the resource group location.')
param location string = resourceGroup().location

@description('Optional. Tags applied to the vault (tag names with string values: tagsType).')
param tags tagsType = {}

@description('Optional. Whether to create the RabbitMQ secrets (Erlang cookie, admin password). False for a Kafka cluster, whose brokers use neither: then both values may be empty and their secret name outputs are empty.')
param rabbitmqSecretsEnabled bool = true

@description('Optional. Required when rabbitmqSecretsEnabled (main.bicep refuses one shorter than 20 characters by name). Erlang cookie shared by the cluster nodes. Stored as a secret; never output.')
@secure()
param erlangCookie string = ''

@description('Optional. Required when rabbitmqSecretsEnabled (main.bicep refuses one shorter than 12 characters by name). Password of the RabbitMQ administrator. Stored as a secret; never output.')
@secure()
param rabbitmqAdminPassword string = ''

@description('Required. Subnets whose service endpoint may reach the vault (the cluster subnet and the load-generator subnet).')
@minLength(1)
param allowedSubnetResourceIds string[]

@description('Optional. PEM certificate of the nodes\' TLS listeners. Empty: no TLS secrets are created.')
param tlsCertificatePem string = ''

@description('Optional. PEM private key of tlsCertificatePem. Stored as a secret; never output. Empty: no TLS secrets are created.')
@secure()
param tlsPrivateKeyPem string = ''

@description('Optional. Turn on purge protection. It cannot be turned off again and keeps the vault name reserved for the soft-delete retention period after teardown, which blocks redeploying the same benchmark under the same name.')
param enablePurgeProtection bool = false

@description('Optional. Soft-delete retention in days.')
@minValue(7)
@maxValue(90)
param softDeleteRetentionInDays int = 7

var erlangCookieSecretName = 'rabbitmq-erlang-cookie'
var adminPasswordSecretName = 'rabbitmq-admin-password'
var tlsCertificateSecretName = 'rabbitmq-tls-certificate'
var tlsPrivateKeySecretName = 'rabbitmq-tls-private-key'
// main.bicep refuses one without the other (fail()), so the certificate alone says whether TLS is on.
var tlsEnabled = !empty(tlsCertificatePem)
// The secrets live exactly as long as the cluster (the resource group is deleted with it): no expiry (`exp` is optional in
// SecretAttributes, default forever: https://learn.microsoft.com/azure/key-vault/secrets/about-secrets#secret-attributes). Past `exp`
// "the secret data should not be retrieved" (same page); Key Vault answers a get with 403 SecretExpired
// (https://github.com/Azure/AzureKeyVault/issues/19), so a scale-out or re-image after an expiry date would fail to boot.

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  // checkov:skip=CKV_AZURE_110: purge protection is a parameter (enablePurgeProtection), off by default: it cannot be undone and reserves the vault name after teardown, which blocks redeploying a benchmark under the same name; the vault holds only per-deployment secrets.
  // checkov:skip=CKV_AZURE_42: recoverable means soft delete plus purge protection; soft delete is on, purge protection is off by default for the reason given for CKV_AZURE_110.
  // checkov:skip=CKV_AZURE_189: public network access stays on only so that the service endpoints of the cluster and load-generator subnets can reach the vault; the firewall denies everything else (defaultAction Deny). A private endpoint and DNS zone are not worth it for a disposable benchmark.
  name: keyVaultName
  location: location
  tags: tags
  properties: {
    tenantId: subscription().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: softDeleteRetentionInDays
    // The API accepts only true or nothing.
    enablePurgeProtection: enablePurgeProtection ? true : null
    enabledForDeployment: false
    enabledForTemplateDeployment: false
    enabledForDiskEncryption: false
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      defaultAction: 'Deny'
      bypass: 'AzureServices'
      ipRules: []
      virtualNetworkRules: [
        for subnetId in allowedSubnetResourceIds: {
          id: subnetId
          ignoreMissingVnetServiceEndpoint: false
        }
      ]
    }
  }
}

// Created only for RabbitMQ (an `if` condition applies to the whole resource:
// https://learn.microsoft.com/azure/azure-resource-manager/bicep/conditional-resource-deployment).
resource erlangCookieSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (rabbitmqSecretsEnabled) {
  // checkov:skip=CKV_AZURE_114: contentType is set below; checkov's Bicep parser does not read the properties of a conditional (`= if`) resource.
  // checkov:skip=CKV_AZURE_41: no expiry on purpose: the secret lives as long as the cluster, and an expired secret would stop a later scale-out or re-image from booting (see the comment on the secret names above).
  parent: vault
  name: erlangCookieSecretName
  properties: {
    value: erlangCookie
    contentType: 'text/plain; erlang-cookie'
    attributes: {
      enabled: true
    }
  }
}

resource adminPasswordSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (rabbitmqSecretsEnabled) {
  // checkov:skip=CKV_AZURE_114: contentType is set below; checkov's Bicep parser does not read the properties of a conditional (`= if`) resource.
  // checkov:skip=CKV_AZURE_41: no expiry on purpose: the secret lives as long as the cluster, and an expired secret would stop a later scale-out or re-image from booting.
  parent: vault
  name: adminPasswordSecretName
  properties: {
    value: rabbitmqAdminPassword
    contentType: 'text/plain; password'
    attributes: {
      enabled: true
    }
  }
}

// The nodes read both at boot to serve AMQPS 5671 and management HTTPS 15671 (bicep/cloud-init/rmqbench-node-setup.sh).
resource tlsCertificateSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (tlsEnabled) {
  // checkov:skip=CKV_AZURE_114: contentType is set below; checkov's Bicep parser does not read the properties of a conditional (`= if`) resource.
  // checkov:skip=CKV_AZURE_41: no expiry on purpose: the secret lives as long as the cluster (the certificate's own validity covers the cluster's expiry).
  parent: vault
  name: tlsCertificateSecretName
  properties: {
    value: tlsCertificatePem
    contentType: 'application/x-pem-file'
    attributes: {
      enabled: true
    }
  }
}

resource tlsPrivateKeySecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (tlsEnabled) {
  // checkov:skip=CKV_AZURE_114: contentType is set below; checkov's Bicep parser does not read the properties of a conditional (`= if`) resource.
  // checkov:skip=CKV_AZURE_41: no expiry on purpose: the secret lives as long as the cluster.
  parent: vault
  name: tlsPrivateKeySecretName
  properties: {
    value: tlsPrivateKeyPem
    contentType: 'application/x-pem-file'
    attributes: {
      enabled: true
    }
  }
}

@description('The name of the Key Vault.')
output name string = vault.name

@description('The resource ID of the Key Vault.')
output resourceId string = vault.id

// The names come from the variables, not from the conditional resources: a property of a resource that may not be deployed
// may be null (Bicep's BCP318, same page as above).
@description('The name of the secret that holds the Erlang cookie (the name, not the value; empty when rabbitmqSecretsEnabled is false).')
output erlangCookieSecretName string = rabbitmqSecretsEnabled ? erlangCookieSecretName : ''

@description('The name of the secret that holds the admin password (the name, not the value; empty when rabbitmqSecretsEnabled is false).')
#disable-next-line outputs-should-not-contain-secrets // a secret's name, not its value: the rule flags "password" in output names (https://learn.microsoft.com/azure/azure-resource-manager/bicep/linter-rule-outputs-should-not-contain-secrets)
output adminPasswordSecretName string = rabbitmqSecretsEnabled ? adminPasswordSecretName : ''

@description('The name of the secret that holds the TLS certificate (empty without TLS).')
output tlsCertificateSecretName string = tlsEnabled ? tlsCertificateSecretName : ''

@description('The name of the secret that holds the TLS private key (the name, not the value; empty without TLS).')
output tlsPrivateKeySecretName string = tlsEnabled ? tlsPrivateKeySecretName : ''
