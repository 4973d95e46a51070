// Compute tier, 4 vCPU. Reproduces thesis Table 6.2 (F4s: 4 vCPU, 8 GB, compute optimized; multi-queue tests of Table 6.1, Figure 6.2; price in Table 7.1) with the F16s load generator. F4s is previous-generation: Standard_F4s_v2 (4 vCPU, 8 GiB) is the current F-series size.
// Set the RMQBENCH_* variables first (see README.md: `rmqbench broker-config --target azure` prints the broker ones).
using 'main.bicep'

param clusterVmSize = 'Standard_F4s_v2'
param loadGeneratorVmSize = 'Standard_F16s_v2'
param instanceCount = 3
param acceleratedNetworking = true
param rabbitmqVersion = readEnvironmentVariable('RMQBENCH_RABBITMQ_VERSION', '3.13.7')
param tags = {
  project: 'rmqbench'
  tier: 'compute-f4'
}

param allowedSourceAddressPrefixes = split(readEnvironmentVariable('RMQBENCH_ALLOWED_SOURCES'), ',')
param adminSshPublicKey = readEnvironmentVariable('RMQBENCH_SSH_PUBLIC_KEY')
param rabbitmqConf = readEnvironmentVariable('RMQBENCH_RABBITMQ_CONF')
param enabledPluginsFile = readEnvironmentVariable('RMQBENCH_ENABLED_PLUGINS_FILE')
param policyCommandsJson = readEnvironmentVariable('RMQBENCH_POLICY_COMMANDS_JSON')
param rabbitmqAdminPassword = readEnvironmentVariable('RMQBENCH_ADMIN_PASSWORD')
param erlangCookie = readEnvironmentVariable('RMQBENCH_ERLANG_COOKIE')
