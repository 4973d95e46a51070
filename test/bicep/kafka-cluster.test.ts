import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KAFKA_ARTIFACTS } from '../../cdk/kafka-artifacts';
import { kafkaClusterId } from '../../cdk/KafkaCluster';
import { kafkaServerProperties } from '../../cdk/user-data/kafka-node';
import { KAFKA_BROKER_LOG4J } from '../../core/kafka/kafka-broker-log4j';
import { BICEP_DIR } from './bicep-tree';

/**
 * The Azure Kafka module (bicep/modules/kafka-cluster.bicep) and its boot files: the jar pins are the AWS brokers' (one
 * classpath everywhere), the broker log4j2 configuration is the shared one, and the setup script, run by bash, renders
 * the same server.properties as the AWS brokers (IPs for names) and derives the same cluster id as KafkaCluster.
 */
const CLOUD_INIT = join(BICEP_DIR, 'cloud-init');
const SETUP = join(CLOUD_INIT, 'rmqbench-kafka-setup.sh');

function runSetup(
  env: Record<string, string>,
  ...args: string[]
): { status: number | null; stdout: string; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-setup-'));
  try {
    const envFile = join(dir, 'kafka.env');
    writeFileSync(
      envFile,
      Object.entries(env)
        .map(([key, value]) => `${key}=${value}\n`)
        .join(''),
    );
    const run = spawnSync('bash', [SETUP, ...args], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', RMQBENCH_KAFKA_ENV: envFile },
      timeout: 30_000,
    });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ENV = {
  CLIENT_PORT: '9092',
  CONTROLLER_PORT: '9093',
  CLUSTER_SEED: '/subscriptions/x/resourceGroups/rmqbench-run-1-c1/rmqbench-kafka',
  KAFKA_VERSION: '4.3.1',
  JAVA_PACKAGE: 'openjdk-21-jre-headless',
  QUORUM_TIMEOUT_SECONDS: '900',
};

describe('Azure Kafka cluster module', () => {
  test('the jar manifest pins exactly the 92 jars and SHA-256 sums of cdk/kafka-artifacts.ts', () => {
    const manifest = readFileSync(join(CLOUD_INIT, 'kafka-4.3.1.sha256'), 'utf8');
    expect(manifest).toBe(KAFKA_ARTIFACTS.map((artifact) => `${artifact.sha256}  ${artifact.path}\n`).join(''));
    expect(KAFKA_ARTIFACTS).toHaveLength(92);
  });

  test('the brokers log with the shared broker log4j2 configuration', () => {
    expect(readFileSync(join(CLOUD_INIT, 'kafka-log4j2.properties'), 'utf8')).toBe(KAFKA_BROKER_LOG4J);
  });

  test(
    "the setup script renders the AWS brokers' server.properties, with " +
      "each broker's static private IP as its name, for 1 and 3 brokers",
    () => {
      for (const hosts of [['10.20.1.100'], ['10.20.1.100', '10.20.1.101', '10.20.1.102']]) {
        const all = hosts.map((hostName, index) => ({ nodeId: index + 1, hostName }));
        for (const self of all) {
          const run = runSetup(
            { ...ENV, NODE_ID: String(self.nodeId), BROKER_HOSTS: hosts.join(',') },
            '--print-server-properties',
          );
          expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
          const aws = kafkaServerProperties({ self, all, clientPort: 9092, controllerPort: 9093 });
          // Only the first comment line names the cloud.
          expect(run.stdout.split('\n').slice(1)).toEqual(aws.split('\n').slice(1));
          expect(run.stdout.split('\n')[0]).toBe(
            '# Written by rmqbench (Kafka on Azure): a combined broker+controller in KRaft mode, no ZooKeeper.',
          );
          expect(run.stdout).toContain(`advertised.listeners=PLAINTEXT://${self.hostName}:9092\n`);
        }
      }
    },
  );

  test(
    'every broker derives the cluster id KafkaCluster would ' + 'from the same seed (22 characters of URL-safe base64)',
    () => {
      for (const seed of [
        ENV.CLUSTER_SEED,
        'a',
        '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/x-kafka',
      ]) {
        const run = runSetup(
          { ...ENV, NODE_ID: '1', BROKER_HOSTS: '10.0.0.4', CLUSTER_SEED: seed },
          '--print-cluster-id',
        );
        expect(run.status).toBe(0);
        expect(run.stdout.trim()).toBe(kafkaClusterId(seed));
        expect(run.stdout.trim()).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
      }
    },
  );

  test(
    "a broker's customData, as the module assembles it (every file base64 " +
      "in the YAML, the YAML base64 again), stays under Azure's 64 KiB",
    () => {
      const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64');
      const file = (name: string) => readFileSync(join(CLOUD_INIT, name));
      const environment =
        'NODE_ID=7\n' +
        `BROKER_HOSTS=${Array.from({ length: 7 }, (_, i) => `10.20.1.${100 + i}`).join(',')}\n` +
        `CLIENT_PORT=9092\nCONTROLLER_PORT=9093\nCLUSTER_SEED=${'x'.repeat(200)}\n` +
        'KAFKA_VERSION=4.3.1\nJAVA_PACKAGE=openjdk-21-jre-headless\nQUORUM_TIMEOUT_SECONDS=900\n';
      const yaml = file('kafka-cluster.yaml')
        .toString('utf8')
        .replace('{{KAFKA_MANIFEST_B64}}', b64(file('kafka-4.3.1.sha256')))
        .replace('{{KAFKA_LOG4J_B64}}', b64(file('kafka-log4j2.properties')))
        .replace('{{KAFKA_SETUP_B64}}', b64(file('rmqbench-kafka-setup.sh')))
        .replace('{{KAFKA_ENV_B64}}', b64(environment));
      expect(yaml).not.toMatch(/\{\{[A-Z]/);
      // https://learn.microsoft.com/azure/virtual-machines/custom-data: "The maximum length of custom data is 64 KB"
      // (base64-encoded).
      expect(b64(yaml).length).toBeLessThan(64 * 1024);
    },
  );

  test(
    "the setup script finds the data disk by WALinuxAgent's link or by azure-vm-utils' (an " +
      'image may carry only one of their udev rules), and names both when neither is there',
    () => {
      const links = { walinuxagent: '/dev/disk/azure/scsi1/lun0', azureVmUtils: '/dev/disk/azure/data/by-lun/0' };
      const root = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-disk-'));
      try {
        const find = (present: string[]) => {
          rmSync(join(root, 'dev'), { recursive: true, force: true });
          for (const link of present) {
            mkdirSync(join(root, link, '..'), { recursive: true });
            symlinkSync('/dev/null', join(root, link));
          }
          return runSetup({ ...ENV, NODE_ID: '1', BROKER_HOSTS: '10.0.0.4' }, '--print-data-disk', root);
        };
        expect(find([links.walinuxagent])).toMatchObject({ status: 0, stdout: `${root}${links.walinuxagent}\n` });
        expect(find([links.azureVmUtils])).toMatchObject({ status: 0, stdout: `${root}${links.azureVmUtils}\n` });
        // Both name the same disk; WALinuxAgent's, the one the simulated brokers use, comes first.
        expect(find([links.azureVmUtils, links.walinuxagent])).toMatchObject({
          status: 0,
          stdout: `${root}${links.walinuxagent}\n`,
        });
        expect(find([])).toMatchObject({ status: 1, stdout: '' });
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
      expect(readFileSync(SETUP, 'utf8')).toContain(
        'the data disk (LUN 0: /dev/disk/azure/scsi1/lun0 or /dev/disk/azure/data/by-lun/0) did not appear',
      );
    },
  );

  test('an unknown argument is refused by name', () => {
    const run = runSetup({ ...ENV, NODE_ID: '1', BROKER_HOSTS: '10.0.0.4' }, '--bogus');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('unknown argument --bogus');
  });

  test(
    'the module fills every placeholder of its cloud-init, gives ' +
      'each broker a static IP from the subnet, and takes no secret',
    () => {
      const module = readFileSync(join(BICEP_DIR, 'modules/kafka-cluster.bicep'), 'utf8');
      const placeholders = [
        ...new Set(readFileSync(join(CLOUD_INIT, 'kafka-cluster.yaml'), 'utf8').match(/\{\{[A-Z0-9_]+\}\}/g) ?? []),
      ];
      expect(placeholders.sort()).toEqual([
        '{{KAFKA_ENV_B64}}',
        '{{KAFKA_LOG4J_B64}}',
        '{{KAFKA_MANIFEST_B64}}',
        '{{KAFKA_SETUP_B64}}',
      ]);
      for (const placeholder of placeholders) expect(module).toContain(`'${placeholder}'`);
      expect(module).toContain("privateIPAllocationMethod: 'Static'");
      expect(module).toContain('cidrHost(subnetAddressPrefix, firstHostNumber + i)');
      expect(module).not.toMatch(/@secure\(\)/);
      // The environment names the keys the setup script reads.
      for (const key of [
        'NODE_ID',
        'BROKER_HOSTS',
        'CLIENT_PORT',
        'CONTROLLER_PORT',
        'CLUSTER_SEED',
        'KAFKA_VERSION',
        'JAVA_PACKAGE',
        'QUORUM_TIMEOUT_SECONDS',
      ]) {
        expect(module).toContain(`${key}=\${`);
        expect(readFileSync(SETUP, 'utf8')).toContain(`$${key}`);
      }
      const main = readFileSync(join(BICEP_DIR, 'main.bicep'), 'utf8');
      expect(main).toContain("module kafkaCluster 'modules/kafka-cluster.bicep' = if (broker == 'kafka') {");
      expect(main).toContain("module cluster 'modules/cluster.bicep' = if (broker == 'rabbitmq') {");
      expect(main).toContain(
        "output kafkaBootstrapServers string = broker == 'kafka' ? kafkaCluster.outputs.bootstrapServers : ''",
      );
    },
  );
});
