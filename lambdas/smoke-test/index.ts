import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SSMClient } from '@aws-sdk/client-ssm';
import { certificateFingerprint256 } from '../../core/cloud/self-signed-certificate';
import type { WorkflowTarget } from '../../state-machines/schedule';
import { kafkaSmokeTest, natsSmokeTest } from './load-generator-smoke';
import { managementSmokeTest, smokeTest } from './logic';
import { withTransientErrors } from '../shared/transient-errors';
import { positiveEnvNumber } from '../shared/env';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');
const azureKafka = () => import('./azure-load-generator');

const secrets = new SecretsManagerClient({});
const ssm = new SSMClient({});

/** The endpoint with credentials, keeping its scheme (amqp:// or amqps://; amqp:// when it has none). */
const amqpUrl = (username: string, password: string, endpoint: string) => {
  const scheme = /^amqps:\/\//.test(endpoint) ? 'amqps' : 'amqp';
  return (
    `${scheme}://${encodeURIComponent(username)}:${encodeURIComponent(password)}@` +
    `${endpoint.replace(/^amqps?:\/\//, '')}`
  );
};

/**
 * Publishes and consumes one message through the cluster's load balancer with the admin credentials (Secrets Manager on
 * AWS, the template parameters on Azure).
 * Azure clusters are reached through their public load balancer, which serves only TLS (bicep/modules/cluster.bicep):
 * AMQPS and the
 * management API over HTTPS, both pinned to the deployment's own certificate (the `tlsCertificatePem` output).
 */
export const handler = withTransientErrors(
  async (event: {
    target?: WorkflowTarget;
    cluster?: { nodes: number };
    launch?: { clusterId?: string; tlsCertificateFingerprint256?: string };
    readiness: { outputs: Record<string, string> };
  }) => {
    const outputs = event.readiness.outputs;
    if (event.target === 'azure') {
      const { clients, parameters } = await (await azureTarget()).azureClientsFromEnv();
      // main.bicep with broker kafka outputs the brokers' bootstrap servers (empty for RabbitMQ): the AWS Kafka smoke
      // test, through a managed Run Command.
      if (outputs.kafkaBootstrapServers) {
        if (!event.launch?.clusterId)
          throw new Error("the Kafka smoke test on azure needs the launch's resource group (launch.clusterId)");
        return (await azureKafka()).azureKafkaSmokeTest(
          clients,
          event.launch.clusterId,
          outputs,
          event.cluster?.nodes ?? outputs.kafkaBootstrapServers.split(',').length,
        );
      }
      // main.bicep with broker nats outputs the servers' URLs: the AWS NATS smoke test, through a managed Run Command.
      if (outputs.natsServerUrls) {
        if (!event.launch?.clusterId)
          throw new Error("the NATS smoke test on azure needs the launch's resource group (launch.clusterId)");
        return (await azureKafka()).azureNatsSmokeTest(
          clients,
          event.launch.clusterId,
          outputs,
          event.cluster?.nodes ?? outputs.natsServerUrls.split(',').length,
        );
      }
      const password = parameters.rabbitmqAdminPassword;
      const username =
        typeof parameters.rabbitmqAdminUsername === 'string' ? parameters.rabbitmqAdminUsername : 'rmqbench-admin';
      const { amqpsEndpoint, managementHttpsUrl, tlsCertificatePem } = outputs;
      if (typeof password !== 'string') throw new Error('the template parameters lack rabbitmqAdminPassword');
      if (!amqpsEndpoint || !managementHttpsUrl || !tlsCertificatePem) {
        throw new Error(
          'the Azure deployment has no amqpsEndpoint, managementHttpsUrl or tlsCertificatePem output ' +
            '(they are set when the load balancer is public, as LaunchCluster deploys it)',
        );
      }
      // The pin comes from the deployment's output; it must be the certificate LaunchCluster made for this deployment.
      const launched = event.launch?.tlsCertificateFingerprint256;
      const echoed = certificateFingerprint256(tlsCertificatePem);
      if (echoed !== launched)
        throw new Error(
          `the deployment's tlsCertificatePem (${echoed}) is not the certificate LaunchCluster made for it ` +
            `(${launched ?? 'none recorded'})`,
        );
      const amqp = await smokeTest(amqpUrl(username, password, amqpsEndpoint), undefined, tlsCertificatePem);
      const management = await managementSmokeTest(managementHttpsUrl, username, password, tlsCertificatePem);
      return { ...amqp, clusterName: management.clusterName };
    }
    // A KafkaCluster stack (cdk/BenchmarkController.ts buildKafkaTemplateApp) outputs the brokers' bootstrap servers.
    const bootstrapServers = Object.entries(outputs).find(([key]) => key.includes('BootstrapServers'))?.[1];
    if (bootstrapServers) {
      const instanceId = Object.entries(outputs).find(([key]) => key.includes('InstanceId'))?.[1] ?? '';
      return kafkaSmokeTest(
        ssm,
        instanceId,
        bootstrapServers,
        event.cluster?.nodes ?? bootstrapServers.split(',').length,
      );
    }
    // A NatsCluster stack outputs its servers' URLs; the smoke test runs the NATS load client on the load generator.
    const serverUrls = Object.entries(outputs).find(([key]) => key.includes('ServerUrls'))?.[1];
    if (serverUrls) {
      const instanceId = Object.entries(outputs).find(([key]) => key.includes('InstanceId'))?.[1] ?? '';
      return natsSmokeTest(ssm, instanceId, serverUrls, event.cluster?.nodes ?? serverUrls.split(',').length);
    }
    const endpoint = Object.entries(outputs).find(([key]) => key.includes('AmqpEndpoint'))?.[1];
    const secretArn = Object.entries(outputs).find(([key]) => key.includes('AdminSecretArn'))?.[1];
    if (!endpoint || !secretArn) throw new Error('the cluster stack has no AmqpEndpoint / AdminSecretArn output');
    const secret = await secrets.send(new GetSecretValueCommand({ SecretId: secretArn }));
    const { username, password } = JSON.parse(secret.SecretString ?? '{}') as { username: string; password: string };
    return smokeTest(amqpUrl(username, password, endpoint), smokeTestTimeoutMs());
  },
);

/**
 * How long the AMQP check may take: logic.ts's 20 s, or a positive SMOKE_TEST_TIMEOUT_SECONDS in the function's
 * environment (the cloud twin's test of a dropped port sets 5, so that each try waits out less).
 */
function smokeTestTimeoutMs(): number {
  return positiveEnvNumber('SMOKE_TEST_TIMEOUT_SECONDS', 20) * 1000;
}
