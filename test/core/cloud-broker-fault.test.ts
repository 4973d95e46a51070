import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  brokerFaultScripts,
  CLOUD_BROKER_FAULT_ACTIONS,
  cloudVerifierResource,
} from '../../core/failover/cloud-broker-fault';
import { QueueNotDeclaredError, scriptTime } from '../../core/failover/cloud-fault';
import { VERIFIER_QUEUE } from '../../core/failover/failover';

/**
 * The fault step's Kafka and NATS scripts (core/failover/cloud-broker-fault.ts): their leader parsers on the output
 * the brokers' tools print, and the node check's reading of each broker's own configuration. The scripts run for real
 * on the twins' simulated brokers (test/twin/aws-twin-brokers.integration.test.ts and its Azure twin).
 */
const kafka = brokerFaultScripts('kafka');
const nats = brokerFaultScripts('nats');

/** TopicCommand --describe of Kafka 4.x: a header line, then one tab-separated line per partition. */
const describeOutput = (leader: string) =>
  'Topic: rmqbench-verifier-3\tTopicId: 7dQf2yH8TZ6mYV0mJ3n3rA\tPartitionCount: 1\tReplicationFactor: 3\t' +
  'Configs: min.insync.replicas=2\n' +
  `\tTopic: rmqbench-verifier-3\tPartition: 0\tLeader: ${leader}\tReplicas: 2,3,1\tIsr: 2,3,1\tElr: \tLastKnownElr: \n`;

describe('the Kafka and NATS fault scripts', () => {
  test('each repetition has a verifier topic or stream of its own; RabbitMQ keeps its one queue', () => {
    expect(kafka.resource(3)).toBe('rmqbench-verifier-3');
    expect(nats.resource(12)).toBe(cloudVerifierResource(12));
    expect(brokerFaultScripts('rabbitmq').resource(3)).toBe(VERIFIER_QUEUE);
    expect(() => cloudVerifierResource(0)).toThrow('a repetition index is a positive integer, got 0');
  });

  test('Kafka: the leader of partition 0 by node id; a missing topic or no leader yet is "not declared yet"', () => {
    expect(kafka.leaderOf(describeOutput('2'), 'rmqbench-verifier-3')).toBe('kafka-2');
    expect(() => kafka.leaderOf(describeOutput('none'), 'rmqbench-verifier-3')).toThrow(QueueNotDeclaredError);
    expect(() =>
      kafka.leaderOf(
        "Error while executing topic command : Topic 'rmqbench-verifier-3' does not exist as expected\n",
        'rmqbench-verifier-3',
      ),
    ).toThrow(/topic rmqbench-verifier-3 is not \(yet\) known to the cluster/);
    expect(() =>
      kafka.leaderOf(
        'Error while executing topic command : org.apache.kafka.common.errors.UnknownTopicOrPartitionException: ' +
          'This server does not host this topic-partition.\n',
        'rmqbench-verifier-3',
      ),
    ).toThrow(QueueNotDeclaredError);
    expect(() => kafka.leaderOf('Error: Could not find or load main class\n', 'rmqbench-verifier-3')).toThrow(
      /^TopicCommand --describe rmqbench-verifier-3 printed no partition leader: Error: Could not find/,
    );
  });

  test('NATS: the stream leader by server_name; a server without the stream defers to the next one', () => {
    expect(nats.leaderOf('{"hosted": true, "leader": "nats-3"}\n', 'rmqbench-verifier-1')).toBe('nats-3');
    expect(nats.leaderOf('{"hosted": false}\n', 'rmqbench-verifier-1')).toBeUndefined();
    expect(() => nats.leaderOf('{"hosted": true, "leader": ""}\n', 'rmqbench-verifier-1')).toThrow(
      QueueNotDeclaredError,
    );
    expect(() => nats.leaderOf('curl: (7) Failed to connect\n', 'rmqbench-verifier-1')).toThrow(
      /the \/jsz listing printed no JSON/,
    );
  });

  test('partition is RabbitMQ’s only; node names and resource names are checked before they reach a script', () => {
    expect(CLOUD_BROKER_FAULT_ACTIONS.kafka).toEqual(['kill', 'stop', 'restart']);
    expect(() => kafka.faultScript('partition', 'kafka-1')).toThrow(/not applied to a kafka node/);
    expect(() => kafka.faultScript('kill', 'rabbit@10.0.0.1')).toThrow('expected a Kafka node name kafka-<n>');
    expect(() => nats.healScript("nats-1'; reboot; '", 'kill')).toThrow('expected a NATS node name nats-<n>');
    expect(() => kafka.leaderScript("x'; reboot")).toThrow(/letters, digits and dashes/);
  });

  /**
   * The node check and the port lookup, run by bash on configuration files as the boots write them (AWS and Azure
   * write the same lines: node.id=<n>, listeners=PLAINTEXT://0.0.0.0:<port>,...; server_name: "nats-<n>",
   * http_port: <port>), with the files' paths pointed into a temporary folder.
   */
  test.each([
    [
      'kafka',
      '/etc/kafka/server.properties',
      'process.roles=broker,controller\nnode.id=2\n' +
        'listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093\n' +
        'advertised.listeners=PLAINTEXT://kafka-2.zone:9092\n',
      'kafka-2',
      '9092',
    ],
    [
      'nats',
      '/etc/nats/nats-server.conf',
      'server_name: "nats-3"\nlisten: "0.0.0.0:4222"\nhttp_port: 8222\njetstream {\n  store_dir: "/var/lib/nats"\n}\n',
      'nats-3',
      '8222',
    ],
  ] as const)(
    '%s: the script runs on the node it names only, and finds its port',
    (broker, path, config, self, port) => {
      const scripts = brokerFaultScripts(broker);
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-broker-fault-'));
      try {
        const file = join(dir, 'config');
        writeFileSync(file, config);
        // The heal script up to its first systemctl call: the node check, then (stubbed) start and port lookup.
        const run = (nodeName: string) => {
          const script = scripts
            .healScript(nodeName, 'kill')
            .replaceAll(path, file)
            .replace(/^systemctl start .*$/m, 'echo "PORT-CHECK"')
            .replace(/^READY_DEADLINE=.*$/m, 'echo "port=$PORT"; exit 0');
          return spawnSync('bash', ['-c', script], { encoding: 'utf8' });
        };
        const here = run(self);
        // The node's clock right before it acts, which the fault step records as healedAt.
        expect({ status: here.status, stdout: here.stdout }).toEqual({
          status: 0,
          stdout: expect.stringMatching(new RegExp(`^rmqbench: healing at \\d{13}\nPORT-CHECK\nport=${port}\n$`)),
        });
        expect(scriptTime(here.stdout, 'healing')!.getTime()).toBeGreaterThan(Date.now() - 60_000);
        const other = run(`${broker}-9`);
        expect({ status: other.status, stderr: other.stderr }).toEqual({
          status: 3,
          stderr: `rmqbench: this VM does not run ${broker}-9 (it runs ${self})\n`,
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
