import { goTarball, GO_VERSION_ON_CLOUD } from '../../cdk/go-toolchain';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { KAFKA_ARTIFACTS } from '../../cdk/kafka-artifacts';
import { KAFKA_TOOL_LOG4J } from '../../core/kafka/kafka-broker-log4j';
import { azureBrokerParameters } from '../../core/cloud/azure-cloud-init';
import type { BicepFile } from './bicep-tree';
import { BICEP_DIR, evaluateString, parameterDependencies, parseBicepFile, propertyValues } from './bicep-tree';

interface CloudConfig {
  write_files: { path: string; encoding?: string; content: string }[];
  runcmd: unknown[];
}

const decodeFiles = (cloudConfig: CloudConfig): Record<string, string> =>
  Object.fromEntries(
    cloudConfig.write_files.map((entry) => [
      entry.path,
      entry.encoding === 'b64' ? Buffer.from(entry.content, 'base64').toString('utf8') : entry.content,
    ]),
  );

/** Evaluates the scale set's customData the way ARM would, from the template text, and decodes it. */
function clusterCustomData(
  cluster: BicepFile,
  params: Record<string, string>,
): { text: string; cloudConfig: CloudConfig } {
  const scaleSet = cluster.resources.find(
    (resource) => resource.resourceType === 'Microsoft.Compute/virtualMachineScaleSets',
  );
  const [customData] = propertyValues(scaleSet?.body as never, 'customData');
  const text = Buffer.from(evaluateString(cluster, customData as never, params), 'base64').toString('utf8');
  return { text, cloudConfig: parseYaml(text) as CloudConfig };
}

describe('cloud-init customData carries the shared generator output unchanged', () => {
  let cluster: BicepFile;
  let loadgen: BicepFile;
  beforeAll(async () => {
    cluster = await parseBicepFile(`${BICEP_DIR}/modules/cluster.bicep`);
    loadgen = await parseBicepFile(`${BICEP_DIR}/modules/loadgen.bicep`);
  });

  test.each([
    [
      'mirrored to all on 3.13',
      { topology: { type: 'mirrored', mirrorTo: 'all' }, rabbitmqVersion: '3.13.7', nodeCount: 3 },
    ],
    ['quorum on 4.1', { topology: { type: 'quorum', replicationFactor: 3 }, rabbitmqVersion: '4.1.2', nodeCount: 3 }],
  ] as const)('%s: the node files are byte-for-byte the generator output', (_name, options) => {
    const broker = azureBrokerParameters(options);
    const { text, cloudConfig } = clusterCustomData(cluster, { ...broker });
    expect(text.startsWith('#cloud-config\n')).toBe(true);
    expect(text).not.toMatch(/\{\{[A-Z0-9_]+\}\}/);
    const written = decodeFiles(cloudConfig);
    expect(written['/etc/rmqbench/rabbitmq.conf']).toBe(broker.rabbitmqConf);
    expect(written['/etc/rmqbench/enabled_plugins']).toBe(broker.enabledPluginsFile);
    expect(written['/etc/rmqbench/policy-commands.json']).toBe(broker.policyCommandsJson);
    // The setup script installs exactly those files as the broker's configuration.
    const setup = written['/usr/local/sbin/rmqbench-node-setup'] ?? '';
    expect(setup).toContain('/etc/rmqbench/rabbitmq.conf /etc/rabbitmq/rabbitmq.conf');
    expect(setup).toContain('/etc/rmqbench/enabled_plugins /etc/rabbitmq/enabled_plugins');
    expect(setup).toContain("jq -c '.[]' /etc/rmqbench/policy-commands.json");
    expect(written['/etc/rmqbench/node.env']).toContain('KEY_VAULT_NAME=<keyVaultName>');
  });

  test(
    'customData is built from the rabbitmqConf, enabledPluginsFile ' +
      'and policyCommandsJson parameters, and from no secret',
    () => {
      const scaleSet = cluster.resources.find(
        (resource) => resource.resourceType === 'Microsoft.Compute/virtualMachineScaleSets',
      );
      const [customData] = propertyValues(scaleSet?.body as never, 'customData');
      const dependencies = parameterDependencies(cluster, customData as never);
      expect([...dependencies]).toEqual(
        expect.arrayContaining(['rabbitmqConf', 'enabledPluginsFile', 'policyCommandsJson', 'rabbitmqVersion']),
      );
      expect(dependencies.has('adminSshPublicKey')).toBe(false);
    },
  );

  test('a change in the generator output changes the customData (the parameters are really used)', () => {
    const a = clusterCustomData(cluster, {
      ...azureBrokerParameters({ topology: { type: 'classic' }, rabbitmqVersion: '3.13.7', nodeCount: 3 }),
    }).text;
    const b = clusterCustomData(cluster, {
      ...azureBrokerParameters({
        topology: { type: 'mirrored', mirrorTo: 2 },
        rabbitmqVersion: '3.13.7',
        nodeCount: 3,
      }),
    }).text;
    expect(a).not.toBe(b);
  });

  test('the customData stays under the 64 KiB limit Azure puts on it', () => {
    const broker = azureBrokerParameters({
      topology: { type: 'mirrored', mirrorTo: 'all' },
      rabbitmqVersion: '3.13.7',
      nodeCount: 7,
    });
    const scaleSet = cluster.resources.find(
      (resource) => resource.resourceType === 'Microsoft.Compute/virtualMachineScaleSets',
    );
    const [customData] = propertyValues(scaleSet?.body as never, 'customData');
    expect(evaluateString(cluster, customData as never, { ...broker }).length).toBeLessThan(65536);
  });

  test('the load generator installs PerfTest 2.22.1 from Maven Central with a sha256 for every jar', () => {
    const vm = loadgen.resources.find((resource) => resource.resourceType === 'Microsoft.Compute/virtualMachines');
    const [customData] = propertyValues(vm?.body as never, 'customData');
    const text = Buffer.from(evaluateString(loadgen, customData as never, {}), 'base64').toString('utf8');
    const cloudConfig = parseYaml(text) as CloudConfig;
    const written = decodeFiles(cloudConfig);
    const manifest = (written['/etc/rmqbench/perf-test.sha256'] ?? '').trim().split('\n');
    expect(manifest).toHaveLength(25);
    for (const line of manifest) expect(line).toMatch(/^[0-9a-f]{64} {2}[\w./-]+\.jar$/);
    expect(manifest).toContain(
      '57b2057b56f582e88bd5f89a2c7c4507139b48bfb80a23b5e12809f31aba8acf  ' +
        'com/rabbitmq/perf-test/2.22.1/perf-test-2.22.1.jar',
    );
    // Both setup scripts source the one jar download and check (rmqbench-jars.sh) from where cloud-init writes it.
    const jarsLib = '/usr/local/lib/rmqbench/rmqbench-jars.sh';
    expect(written[jarsLib]).toBe(readFileSync(join(__dirname, '../../bicep/cloud-init/rmqbench-jars.sh'), 'utf8'));
    expect(written[jarsLib]).toContain('sha256sum --check --strict');
    for (const setup of ['/usr/local/sbin/rmqbench-loadgen-setup', '/usr/local/sbin/rmqbench-kafka-tools-setup']) {
      expect({ setup, sources: written[setup]?.includes(`. "\${RMQBENCH_JARS_LIB:-${jarsLib}}"`) }).toEqual({
        setup,
        sources: true,
      });
    }
    expect(written['/usr/local/sbin/rmqbench-loadgen-setup']).toContain('rmqbench_check_jars "$home"');
    expect(written['/usr/local/bin/rmqbench-upload']).toContain('--upload-file');
    expect(cloudConfig.runcmd).toEqual([
      ['/usr/local/sbin/rmqbench-loadgen-setup', '2.22.1', 'openjdk-21-jre-headless'],
      ['/usr/local/sbin/rmqbench-kafka-tools-setup', '4.3.1'],
      // Without natsTools the Go setup installs nothing.
      ['/usr/local/sbin/rmqbench-go-setup', 'none'],
    ]);
  });

  test("with natsTools (a NATS cluster's load generator) it installs the pinned Go of cdk/go-toolchain.ts", () => {
    const vm = loadgen.resources.find((resource) => resource.resourceType === 'Microsoft.Compute/virtualMachines');
    const [customData] = propertyValues(vm?.body as never, 'customData');
    const text = Buffer.from(evaluateString(loadgen, customData as never, { natsTools: 'true' }), 'base64').toString(
      'utf8',
    );
    const cloudConfig = parseYaml(text) as CloudConfig;
    const written = decodeFiles(cloudConfig);
    expect(cloudConfig.runcmd).toContainEqual(['/usr/local/sbin/rmqbench-go-setup', GO_VERSION_ON_CLOUD]);
    expect(written['/etc/rmqbench/go.sha256']).toBe(
      (['amd64', 'arm64'] as const)
        .map((arch) => `${goTarball(arch).sha256}  go${GO_VERSION_ON_CLOUD}.linux-${arch}.tar.gz\n`)
        .join(''),
    );
    expect(written['/usr/local/sbin/rmqbench-go-setup']).toBe(
      readFileSync(join(__dirname, '../../bicep/cloud-init/rmqbench-go-setup.sh'), 'utf8'),
    );
    expect(text.length).toBeLessThan(65536);
  });

  test(
    "the load generator installs Kafka's tools from the brokers' " +
      "pinned jars, with the AWS load generator's log4j2 configuration",
    () => {
      const vm = loadgen.resources.find((resource) => resource.resourceType === 'Microsoft.Compute/virtualMachines');
      const [customData] = propertyValues(vm?.body as never, 'customData');
      const text = Buffer.from(evaluateString(loadgen, customData as never, {}), 'base64').toString('utf8');
      expect(text).not.toMatch(/\{\{[A-Z0-9_]+\}\}/);
      const written = decodeFiles(parseYaml(text) as CloudConfig);
      expect(written['/etc/rmqbench/kafka.sha256']).toBe(
        KAFKA_ARTIFACTS.map((artifact) => `${artifact.sha256}  ${artifact.path}\n`).join(''),
      );
      expect(written['/etc/rmqbench/kafka-tool-log4j2.properties']).toBe(KAFKA_TOOL_LOG4J);
      expect(written['/usr/local/sbin/rmqbench-kafka-tools-setup']).toBe(
        readFileSync(join(__dirname, '../../bicep/cloud-init/rmqbench-kafka-tools-setup.sh'), 'utf8'),
      );
      expect(text.length).toBeLessThan(65536);
    },
  );
});
