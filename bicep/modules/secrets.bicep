metadata name = 'rmqbench secrets'
metadata description = 'Key Vault (RBAC, firewalled to the cluster and load-generator subnets) holding the Erlang cookie and the RabbitMQ admin password.'

@description('Required. Name of the Key Vault (3-24 characters, globally unique).')
@minLength(3)
@maxLength(24)
param keyVaultName string

@description('Optional. Location of the vault. Defaults to the resource group location.')
param location string = resourceGroup().location

@description('Optional. Tags applied to the vault.')
param tags object = {}

@description('Required. Erlang cookie shared by the cluster nodes. Stored as a secret; never output.')
@secure()
@minLength(20)
param erlangCookie string

@description('Required. Password of the RabbitMQ administrator. Stored as a secret; never output.')
@secure()
@minLength(12)
param rabbitmqAdminPassword string

@description('Required. Subnets whose service endpoint may reach the vault (the cluster subnet and the load-generator subnet).')
@minLength(1)
param allowedSubnetResourceIds array

@description('Required. Expiry of both secrets, in seconds since the Unix epoch.')
@minValue(0)
param secretExpiryEpoch int

@description('Optional. Turn on purge protection. It cannot be turned off again and keeps the vault name reserved for the soft-delete retention period after teardown, which blocks redeploying the same benchmark under the same name.')
param enablePurgeProtection bool = false

@description('Optional. Soft-delete retention in days.')
@minValue(7)
@maxValue(90)
param softDeleteRetentionInDays int = 7

var erlangCookieSecretName = 'rabbitmq-erlang-cookie'
var adminPasswordSecretName = 'rabbitmq-admin-password'

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

resource erlangCookieSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: erlangCookieSecretName
  properties: {
    value: erlangCookie
    contentType: 'text/plain; erlang-cookie'
    attributes: {
      enabled: true
      exp: secretExpiryEpoch
    }
  }
}

resource adminPasswordSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: adminPasswordSecretName
  properties: {
    value: rabbitmqAdminPassword
    contentType: 'text/plain; password'
    attributes: {
      enabled: true
      exp: secretExpiryEpoch
    }
  }
}

@description('The name of the Key Vault.')
output name string = vault.name

@description('The resource ID of the Key Vault.')
output resourceId string = vault.id

@description('The name of the secret that holds the Erlang cookie (the name, not the value).')
output erlangCookieSecretName string = erlangCookieSecret.name

@description('The name of the secret that holds the admin password (the name, not the value).')
output adminPasswordSecretName string = adminPasswordSecret.name
