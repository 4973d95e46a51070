import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { LoadGenerator, RabbitMqCluster } from '../../cdk';
import { AGENT_METRICS, CLOUDWATCH_NAMESPACE } from '../../core/metrics/cloudwatch-host-metrics';
import {
  CLOUDWATCH_AGENT_CONFIG_DELIMITER,
  CLOUDWATCH_AGENT_CONFIG_PATH,
  CLOUDWATCH_AGENT_CTL,
  cloudWatchAgentBootCommands,
} from '../../cdk/user-data/cloudwatch-agent';
import { runAgentBootLines, userDataText } from './template-helpers';

const STACK_NAME_REF = '<{"Ref":"AWS::StackName"}>';

function synthesized() {
  const stack = new Stack(new App(), 'Test');
  const cluster = new RabbitMqCluster(stack, 'Cluster', { nodeCount: 3 });
  new LoadGenerator(stack, 'LoadGenerator', {
    vpc: cluster.vpc,
    resultsBucket: s3.Bucket.fromBucketName(stack, 'Results', 'rmqbench-results'),
    cluster,
  });
  const template = Template.fromStack(stack);
  return {
    template,
    node: userDataText(template, 'AWS::EC2::LaunchTemplate'),
    loadGenerator: userDataText(template, 'AWS::EC2::Instance'),
  };
}

export interface AgentConfig {
  agent: Record<string, unknown>;
  metrics: {
    namespace: string;
    force_flush_interval: number;
    append_dimensions: Record<string, string>;
    metrics_collected: Record<
      string,
      { measurement: string[]; append_dimensions: Record<string, string>; totalcpu?: boolean; resources?: string[] }
    >;
  };
}

/**
 * The agent configuration a boot script writes, as bash writes it (the here-document expands the cluster id argument),
 * with the stack name reference made the stack name STACK (CloudFormation puts a name of letters, digits and hyphens
 * there).
 */
function agentConfig(userData: string): AgentConfig {
  return runAgentBootLines(userData.split(STACK_NAME_REF).join('STACK'), {
    configPath: CLOUDWATCH_AGENT_CONFIG_PATH,
    ctl: CLOUDWATCH_AGENT_CTL,
  }).config as unknown as AgentConfig;
}

describe('host metrics: the CloudWatch agent on the RabbitMQ nodes and the load generator', () => {
  const { template, node, loadGenerator } = synthesized();

  test.each([
    ['RabbitMQ node', () => node, 'rabbitmq-node'],
    ['load generator', () => loadGenerator, 'load-generator'],
  ])(
    'the %s boot installs the agent from the distribution repository and starts it with a configuration naming ' +
      'the cluster, role and instance',
    (_name, userData, role) => {
      const script = userData();
      expect(script).toContain('dnf install -y amazon-cloudwatch-agent');
      expect(script).toContain(
        `${CLOUDWATCH_AGENT_CTL} -a fetch-config -m ec2 -s -c file:${CLOUDWATCH_AGENT_CONFIG_PATH}`,
      );
      const config = agentConfig(script);
      expect(config.agent).toEqual({ metrics_collection_interval: 1, run_as_user: 'cwagent', omit_hostname: true });
      expect(config.metrics.namespace).toBe(CLOUDWATCH_NAMESPACE);
      expect(config.metrics.force_flush_interval).toBe(10);
      expect(config.metrics.append_dimensions).toEqual({ InstanceId: '${aws:InstanceId}' });
      for (const plugin of ['cpu', 'mem', 'diskio', 'net']) {
        expect({ plugin, dimensions: config.metrics.metrics_collected[plugin]?.append_dimensions }).toEqual({
          plugin,
          dimensions: { ClusterId: 'STACK', Role: role },
        });
        expect(config.metrics.metrics_collected[plugin]?.measurement).toEqual(
          AGENT_METRICS.filter((metric) => metric.plugin === plugin).map((metric) => metric.measurement),
        );
      }
      // One cpu-total series (no per-core resources), which is the share of all CPUs.
      expect(config.metrics.metrics_collected.cpu).toEqual(expect.objectContaining({ totalcpu: true }));
      expect(config.metrics.metrics_collected.cpu?.resources).toBeUndefined();
    },
  );

  test(
    'the configuration is one line whose cluster id is the function argument: the stack name is in the script ' +
      'once, and the agent gets ${aws:InstanceId} unexpanded',
    () => {
      for (const script of [node, loadGenerator]) {
        const lines = script.split('\n');
        const heredoc = lines.indexOf(`  cat > ${CLOUDWATCH_AGENT_CONFIG_PATH} <<${CLOUDWATCH_AGENT_CONFIG_DELIMITER}`);
        expect(heredoc).toBeGreaterThan(-1);
        expect(lines[heredoc + 2]).toBe(CLOUDWATCH_AGENT_CONFIG_DELIMITER);
        const agentLines = lines
          .slice(
            lines.indexOf('rmqbench_start_cloudwatch_agent() {'),
            lines.findIndex((line) => line.startsWith('rmqbench_start_cloudwatch_agent ')) + 1,
          )
          .join('\n');
        expect(agentLines.split(STACK_NAME_REF)).toHaveLength(2);
        expect(agentLines).toContain(`rmqbench_start_cloudwatch_agent '${STACK_NAME_REF}' || echo`);
        const { config, ctlArguments } = runAgentBootLines(script.split(STACK_NAME_REF).join('STACK'), {
          configPath: CLOUDWATCH_AGENT_CONFIG_PATH,
          ctl: CLOUDWATCH_AGENT_CTL,
        });
        expect((config as unknown as AgentConfig).metrics.append_dimensions).toEqual({
          InstanceId: '${aws:InstanceId}',
        });
        expect(ctlArguments).toBe(`-a fetch-config -m ec2 -s -c file:${CLOUDWATCH_AGENT_CONFIG_PATH}`);
      }
    },
  );

  test(
    'a cluster id may be a shell variable the script set before ($NAME), and a value that is neither a stack ' +
      'name nor a variable is refused by name',
    () => {
      const lines = cloudWatchAgentBootCommands({ clusterId: '$STACK_NAME', role: 'kafka-broker' }).join('\n');
      expect(lines).toContain('rmqbench_start_cloudwatch_agent "$STACK_NAME" || echo');
      const { config } = runAgentBootLines(
        lines,
        { configPath: CLOUDWATCH_AGENT_CONFIG_PATH, ctl: CLOUDWATCH_AGENT_CTL },
        { STACK_NAME: 'rmqbench-run-7-c2' },
      );
      expect((config as unknown as AgentConfig).metrics.metrics_collected.mem?.append_dimensions).toEqual({
        ClusterId: 'rmqbench-run-7-c2',
        Role: 'kafka-broker',
      });
      expect(() => cloudWatchAgentBootCommands({ clusterId: '$(reboot)', role: 'kafka-broker' })).toThrow(
        /clusterId "\$\(reboot\)" must be a stack name/,
      );
      expect(() => cloudWatchAgentBootCommands({ clusterId: 'c1', role: 'Kafka Broker' })).toThrow(
        /role "Kafka Broker" must be lower-case/,
      );
    },
  );

  test('the agent starts before the RabbitMQ installation (its metrics exist long before the first repetition)', () => {
    expect(node.indexOf('dnf install -y amazon-cloudwatch-agent')).toBeGreaterThan(-1);
    expect(node.indexOf('dnf install -y amazon-cloudwatch-agent')).toBeLessThan(
      node.indexOf('rmqbench_install_packages()'),
    );
  });

  test(
    'the node and load-generator roles may put metrics into the rmqbench namespace only, and nothing else of ' +
      'CloudWatch',
    () => {
      const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
        (policy) =>
          (
            policy as {
              Properties: {
                PolicyDocument: { Statement: { Action: string | string[]; Condition?: unknown; Resource: unknown }[] };
              };
            }
          ).Properties.PolicyDocument.Statement,
      );
      const cloudWatch = statements.filter((statement) =>
        [statement.Action].flat().some((action) => action.startsWith('cloudwatch:')),
      );
      expect(cloudWatch).toEqual([
        {
          Sid: 'PutHostMetricsInRmqbenchNamespace',
          Effect: 'Allow',
          Action: 'cloudwatch:PutMetricData',
          Resource: '*',
          Condition: { StringEquals: { 'cloudwatch:namespace': 'rmqbench' } },
        },
        {
          Sid: 'PutHostMetricsInRmqbenchNamespace',
          Effect: 'Allow',
          Action: 'cloudwatch:PutMetricData',
          Resource: '*',
          Condition: { StringEquals: { 'cloudwatch:namespace': 'rmqbench' } },
        },
      ]);
      // Not the broad AWS managed CloudWatchAgentServerPolicy (logs, SSM parameters, PutMetricData in any namespace).
      expect(JSON.stringify(template.toJSON())).not.toContain('CloudWatchAgentServerPolicy');
    },
  );

  test('detailed monitoring (1-minute EC2 metrics) is on for the nodes and the load generator', () => {
    template.hasResourceProperties('AWS::EC2::LaunchTemplate', {
      LaunchTemplateData: Match.objectLike({ Monitoring: { Enabled: true } }),
    });
    template.hasResourceProperties('AWS::EC2::Instance', { Monitoring: true });
  });

  test(
    'an agent that cannot be installed does not fail the boot: the script goes on and says why metrics will ' +
      'be missing',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-agent-'));
      try {
        writeFileSync(join(dir, 'dnf'), '#!/bin/sh\necho "dnf: no such repository" >&2\nexit 1\n', { mode: 0o755 });
        const script = [
          'set -euo pipefail',
          ...cloudWatchAgentBootCommands({ clusterId: 'rmqbench-run-c1', role: 'rabbitmq-node' }),
          'echo boot-continued',
        ].join('\n');
        const run = spawnSync('bash', ['-c', script], { encoding: 'utf8', env: { PATH: `${dir}:/usr/bin:/bin` } });
        expect(run.status).toBe(0);
        expect(run.stdout).toContain('boot-continued');
        expect(run.stderr).toContain('the CloudWatch agent could not be installed or started');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
