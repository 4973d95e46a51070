import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalKafkaCluster } from '../../local/kafka-cluster';
import { fetchRegisteredBrokers } from '../../local/kafka-metadata';
import { ensureArtifact, KAFKA_ARTIFACT } from '../../local/maven-artifacts';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { alivePids, tempDir } from './helpers';

jest.setTimeout(300_000);

describe('a real KRaft Kafka cluster on localhost', () => {
  const work = tempDir('kafka');
  let jarsDir: string;
  beforeAll(async () => {
    jarsDir = await ensureArtifact(cacheDir(), KAFKA_ARTIFACT);
  });
  afterAll(() => work.cleanup());

  test(
    'three combined broker+controller nodes form a quorum, register, ' +
      'take a replicated topic, and stop leaving nothing running',
    async () => {
      const processes = new ProcessRegistry();
      try {
        const cluster = await LocalKafkaCluster.start({
          nodes: 3,
          workDir: join(work.path, 'three'),
          processes,
          jarsDir,
        });
        // Every broker lists all three as registered.
        for (const node of cluster.nodes) {
          const brokers = await fetchRegisteredBrokers(node.brokerPort);
          expect(brokers.map((broker) => broker.nodeId).sort()).toEqual([1, 2, 3]);
          expect(brokers.find((broker) => broker.nodeId === node.nodeId)!.port).toBe(node.brokerPort);
        }
        const quorum = await cluster.describeQuorum();
        expect(quorum.voters).toEqual([1, 2, 3]);
        expect(quorum.voters).toContain(quorum.leaderId);
        // Only a cluster with three registered brokers can place three replicas.
        await cluster.topicCommand(
          ['--create', '--topic', 'rmqbench-check', '--partitions', '3', '--replication-factor', '3'],
          'topic-create.log',
        );
        await expect(
          cluster.topicCommand(
            ['--create', '--topic', 'rmqbench-too-many', '--partitions', '1', '--replication-factor', '4'],
            'topic-fail.log',
          ),
        ).rejects.toThrow(
          new RegExp(
            String.raw`failed \(exit 1\)[\s\S]*target replication factor of 4 cannot be reached because only 3 ` +
              String.raw`broker\(s\) are registered`,
          ),
        );
        await cluster.stop();
        for (const node of cluster.nodes) expect(existsSync(node.dataDir)).toBe(false);
        expect(alivePids(processes)).toEqual([]);
      } finally {
        await processes.stopAll();
      }
      expect(processes.running).toEqual([]);
    },
  );

  test('a broker that never registers times out with its log tail, and is stopped', async () => {
    // Stands in for a broker that hangs at boot: it logs, never listens, and must be stopped by us.
    const hanging = join(work.path, 'hanging-java');
    writeFileSync(
      hanging,
      '#!/bin/sh\necho "simulated broker hang: waiting for the controller quorum"\nexec sleep 600\n',
    );
    chmodSync(hanging, 0o755);
    const processes = new ProcessRegistry();
    try {
      await expect(
        LocalKafkaCluster.start({
          nodes: 1,
          workDir: join(work.path, 'hang'),
          processes,
          jarsDir,
          startTimeoutMs: 3000,
          brokerJavaCommand: hanging,
        }),
      ).rejects.toThrow(
        new RegExp(
          String.raw`did not form within 3 s \(0 registered\); broker 1 log tail:[\s\S]*simulated broker hang: ` +
            String.raw`waiting for the controller quorum`,
        ),
      );
      expect(alivePids(processes)).toEqual([]);
      expect(existsSync(join(work.path, 'hang', 'kafka1', 'data'))).toBe(false);
    } finally {
      await processes.stopAll();
    }
  });

  test('a broker that exits at boot fails at once with its output', async () => {
    const crashing = join(work.path, 'crashing-java');
    writeFileSync(crashing, '#!/bin/sh\necho "simulated crash: Address already in use"\nexit 1\n');
    chmodSync(crashing, 0o755);
    const processes = new ProcessRegistry();
    try {
      await expect(
        LocalKafkaCluster.start({
          nodes: 1,
          workDir: join(work.path, 'crash'),
          processes,
          jarsDir,
          startTimeoutMs: 60_000,
          brokerJavaCommand: crashing,
        }),
      ).rejects.toThrow(/Kafka broker 1 exited while starting[\s\S]*simulated crash: Address already in use/);
      expect(alivePids(processes)).toEqual([]);
    } finally {
      await processes.stopAll();
    }
  });
});
