import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { KafkaCluster } from '../../cdk';
import { KAFKA_LOG_DIR, KAFKA_SERVER_PROPERTIES, SERVER_PROPERTIES_DELIMITER } from '../../cdk/user-data/kafka-node';
import { cachedArtifactDir, KAFKA_ARTIFACT } from '../../local/maven-artifacts';
import { cacheDir } from '../../local/paths';
import { hereDocument, userDataText } from './template-helpers';

/**
 * The server.properties each broker's user data writes, and the cluster id it formats with, given to the real
 * kafka-storage format of Kafka 4.3.1 (the jars the brokers download, from the local cache): Kafka parses and
 * validates the KRaft configuration (roles, static voters by DNS name, listeners, advertised listeners) and accepts
 * the derived cluster id. Only log.dirs is moved into a temporary folder. Starting the brokers needs their DNS names,
 * which only the VPC's private zone answers: that part is verified in the cloud only.
 */
describe('KafkaCluster boot configuration against the real Kafka 4.3.1 storage tool', () => {
  let work: string;
  let jars: string;
  beforeAll(() => {
    const dir = cachedArtifactDir(cacheDir(), KAFKA_ARTIFACT);
    if (!dir)
      throw new Error(
        `Kafka ${KAFKA_ARTIFACT.version} is not in the rmqbench cache: run scripts/setup.sh (rmqbench doctor ` +
          `--fix fetches it)`,
      );
    jars = dir;
    work = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-format-'));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  function storageFormat(config: string, clusterId: string): { status: number | null; output: string } {
    const result = spawnSync(
      'java',
      [
        '-Xmx256m',
        '-cp',
        `${jars}/*`,
        'kafka.tools.StorageTool',
        'format',
        '--config',
        config,
        '--cluster-id',
        clusterId,
        '--ignore-formatted',
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    if (result.error) throw result.error;
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  }

  test(
    'every broker of a 3-broker cluster formats its storage with its node id and the shared cluster id, and a ' +
      'second boot skips it',
    () => {
      const stack = new Stack(new App(), 'KafkaFormat');
      const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3 });
      const cluster = new KafkaCluster(stack, 'Kafka', { vpc });
      const template = Template.fromStack(stack);
      cluster.instances.forEach((instance, index) => {
        const logicalId = stack.getLogicalId(instance.node.defaultChild as ec2.CfnInstance);
        const userData = userDataText(
          Template.fromJSON({ Resources: { [logicalId]: template.toJSON().Resources[logicalId] } }),
          'AWS::EC2::Instance',
        );
        expect(userData).toContain(`--cluster-id '${cluster.clusterId}'`);
        const logDir = join(work, `broker-${index + 1}`);
        const properties = hereDocument(userData, KAFKA_SERVER_PROPERTIES, SERVER_PROPERTIES_DELIMITER);
        expect(properties).toContain(`log.dirs=${KAFKA_LOG_DIR}\n`);
        const config = join(work, `server-${index + 1}.properties`);
        writeFileSync(config, properties.replace(`log.dirs=${KAFKA_LOG_DIR}\n`, `log.dirs=${logDir}\n`));

        const first = storageFormat(config, cluster.clusterId);
        expect({ status: first.status, output: first.output }).toEqual({
          status: 0,
          output: expect.stringContaining(`Formatting metadata directory ${logDir}`),
        });
        const meta = readFileSync(join(logDir, 'meta.properties'), 'utf8');
        expect(meta).toMatch(new RegExp(`^node\\.id=${index + 1}$`, 'm'));
        expect(meta).toContain(`cluster.id=${cluster.clusterId}\n`);

        const again = storageFormat(config, cluster.clusterId);
        expect({ status: again.status, output: again.output }).toEqual({
          status: 0,
          output: expect.stringContaining('already formatted'),
        });
      });
    },
    180_000,
  );

  test('the check can fail: Kafka refuses a controller whose node id is not among the voters', () => {
    const config = join(work, 'not-a-voter.properties');
    writeFileSync(
      config,
      [
        'process.roles=broker,controller',
        'node.id=4',
        'controller.quorum.voters=1@kafka-1.example.internal:9093,2@kafka-2.example.internal:9093',
        'listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093',
        'advertised.listeners=PLAINTEXT://kafka-4.example.internal:9092',
        'controller.listener.names=CONTROLLER',
        'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
        `log.dirs=${join(work, 'not-a-voter')}`,
        '',
      ].join('\n'),
    );
    const result = storageFormat(config, 'XhuxyDSeQFOy-Fs9hL2few');
    expect(result.status).not.toBe(0);
    expect(result.output).toContain('the node id 4 must be included in the set of voters');
  }, 60_000);
});
