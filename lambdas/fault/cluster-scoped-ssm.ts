import { SSMClient, type SSMClientConfig } from '@aws-sdk/client-ssm';
import { fromTemporaryCredentials, type FromTemporaryCredentialsOptions } from '@aws-sdk/credential-providers';
import { CLUSTER_STACK_SESSION_TAG } from '../../core/failover/cloud-fault';

export interface ClusterScopedSsmOptions {
  /** @default - the Lambda's region and the SDK's defaults */
  readonly ssmConfig?: SSMClientConfig;
  /**
   * The STS client's configuration (its credentials are the function's own). @default - the SSM client's region, the
   * default chain
   */
  readonly stsConfig?: FromTemporaryCredentialsOptions['clientConfig'];
  /** Middleware plugins of the STS client (tests record the AssumeRole request with one). @default - none */
  readonly stsPlugins?: FromTemporaryCredentialsOptions['clientPlugins'];
}

/**
 * An SSM client whose every call runs as the controller's fault node role, assumed with the session tag
 * rmqbench:cluster-stack=<clusterId>: the role may send commands only to instances of that cluster stack
 * (cdk/BenchmarkController.ts FaultNodeRole), so a fault step can reach no other run's nodes, whatever its event says.
 * fromTemporaryCredentials calls STS AssumeRole with the Tags parameter
 * (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html, Tags; 900 s is the shortest session).
 */
export function clusterScopedSsm(roleArn: string, clusterId: string, options: ClusterScopedSsmOptions = {}): SSMClient {
  return new SSMClient({
    ...options.ssmConfig,
    credentials: fromTemporaryCredentials({
      params: {
        RoleArn: roleArn,
        // RoleSessionName: [\w+=,.@-]{2,64} (API_AssumeRole.html); the stack name is [A-Za-z][A-Za-z0-9-]* (at most
        // 128).
        RoleSessionName: `rmqbench-fault-${clusterId}`.slice(0, 64),
        Tags: [{ Key: CLUSTER_STACK_SESSION_TAG, Value: clusterId }],
        DurationSeconds: 900,
      },
      ...(options.stsConfig ? { clientConfig: options.stsConfig } : {}),
      ...(options.stsPlugins ? { clientPlugins: options.stsPlugins } : {}),
    }),
  });
}
