// Low tier. Reproduces thesis Table 5.1 (low-tier cluster, Azure D2_v2: 2 vCPU, 7 GB, accelerated networking) with the load generator of Table 5.4 (F16s). D2_v2 is previous-generation: Standard_D2s_v5 (2 vCPU, 8 GiB) is the current 2-vCPU general-purpose size with accelerated networking. The thesis ran every node in zone 1; this file spreads them over three zones (set availabilityZones = ['1'] to match it exactly).
// Set the RMQBENCH_* variables first (see README.md: `rmqbench broker-config --target azure` prints the broker ones).
using 'main.bicep'

param clusterVmSize = 'Standard_D2s_v5'
param loadGeneratorVmSize = 'Standard_F16s_v2'
param instanceCount = 3
param acceleratedNetworking = true
param rabbitmqVersion = readEnvironmentVariable('RMQBENCH_RABBITMQ_VERSION', '3.13.7')
param tags = {
  project: 'rmqbench'
  tier: 'low'
}

param allowedSourceAddressPrefixes = split(readEnvironmentVariable('RMQBENCH_ALLOWED_SOURCES'), ',')
param adminSshPublicKey = readEnvironmentVariable('RMQBENCH_SSH_PUBLIC_KEY')
param rabbitmqConf = readEnvironmentVariable('RMQBENCH_RABBITMQ_CONF')
param enabledPluginsFile = readEnvironmentVariable('RMQBENCH_ENABLED_PLUGINS_FILE')
param policyCommandsJson = readEnvironmentVariable('RMQBENCH_POLICY_COMMANDS_JSON')
param rabbitmqAdminPassword = readEnvironmentVariable('RMQBENCH_ADMIN_PASSWORD')
param erlangCookie = readEnvironmentVariable('RMQBENCH_ERLANG_COOKIE')
