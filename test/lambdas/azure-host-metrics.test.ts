import { brokerMetricsFromSamples, brokerSeriesOnHosts } from '../../core/broker/broker-samples';
import { azureClusterNodes } from '../../lambdas/fault/azure';
import { azureMonitorHostMetrics } from '../../lambdas/ingest-repetition/azure-metrics';
import { checkDeployment, launchResourceGroup, type AzureClients } from '../../lambdas/shared/azure-cluster';
import type { FakeArm } from './fake-arm';
import { EMPTY_TEMPLATE, fakeClusterConfig, startFakeArm } from './fake-arm-clients';

// The real ARM client pipeline (bearer token, TLS) against the fake ARM endpoint's Azure Monitor metrics API
// (metrics_API.json 2023-10-01 shape: value[].name.value, timeseries[].metadatavalues / data[].timeStamp + average /
// total).

const GROUP = 'rmqbench-run-1-c1';
const SCALE_SET =
  `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` +
  `/Microsoft.Compute/virtualMachineScaleSets/rmqbench-cluster`;
const LOAD_GENERATOR =
  `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` + `/Microsoft.Compute/virtualMachines/rmqbench-loadgen`;
const outputs = {
  scaleSetResourceId: SCALE_SET,
  loadGeneratorResourceId: LOAD_GENERATOR,
  clusterVmSize: 'Standard_D4s_v5',
  loadGeneratorVmSize: 'Standard_F16s_v2',
};
const GIB = 2 ** 30;
// The repetition ran 13:00:20 .. 13:02:40; the platform records one value per minute.
const window = { startedAt: '2026-11-23T13:00:20.000Z', finishedAt: '2026-11-23T13:02:40.000Z' };
const minute = (n: number) => new Date(Date.parse('2026-11-23T13:00:00.000Z') + n * 60_000).toISOString();

/** `template` deployed, once checkDeployment reports it ready (its outputs as CheckClusterReady passes them). */
async function deployed(clients: AzureClients, template: typeof EMPTY_TEMPLATE) {
  const launch = await launchResourceGroup(clients, fakeClusterConfig(template), 'run-1', {
    index: 0,
    clusterId: GROUP,
    nodes: 3,
    topology: 'classic',
    repetitions: [],
  });
  let checked = await checkDeployment(clients, launch);
  while (!checked.ready) checked = await checkDeployment(clients, launch);
  return checked;
}

describe(
  "IngestRepetition reads an Azure repetition's host " + 'metrics from Azure Monitor (ARM client pipeline, fake ARM)',
  () => {
    let arm: FakeArm;
    let clients: AzureClients;
    beforeEach(async () => {
      ({ arm, clients } = await startFakeArm());
    });
    afterEach(async () => arm.stop());

    test(
      'per VM of the scale set and for the load generator: CPU %, ' +
        "used memory (size's memory - available), disk writes and network in + out per second",
      async () => {
        const record = (resource: string, metric: string, vmName: string | undefined, values: number[]) =>
          arm.metricValues.set(resource.toLowerCase(), [
            ...(arm.metricValues.get(resource.toLowerCase()) ?? []),
            ...values.map((value, index) => ({ metric, vmName, timeStamp: minute(index), value })),
          ]);
        record(SCALE_SET, 'Percentage CPU', 'rmqbench-cluster_1a2b3c', [30, 60, 45]);
        record(SCALE_SET, 'Percentage CPU', 'rmqbench-cluster_4d5e6f', [10, 20, 15]);
        record(SCALE_SET, 'Disk Write Bytes', 'rmqbench-cluster_1a2b3c', [6000, 12000, 600]);
        record(SCALE_SET, 'Network In Total', 'rmqbench-cluster_1a2b3c', [60_000, 120_000, 6000]);
        record(SCALE_SET, 'Network Out Total', 'rmqbench-cluster_1a2b3c', [6000, 6000, 6000]);
        // Available memory of a Standard_D4s_v5 (16 GiB) node and of the Standard_F16s_v2 (32 GiB) load generator.
        record(SCALE_SET, 'Available Memory Bytes', 'rmqbench-cluster_1a2b3c', [12 * GIB, 10 * GIB, 11 * GIB]);
        record(LOAD_GENERATOR, 'Available Memory Bytes', undefined, [30 * GIB, 29 * GIB, 29 * GIB]);
        // The 4th minute (13:03) is after the window and not read.
        record(LOAD_GENERATOR, 'Percentage CPU', undefined, [92, 95, 40, 99]);

        const metrics = await azureMonitorHostMetrics(clients, outputs, window);
        expect(metrics.source).toBe('azure-monitor');
        const points = (node: string, metric: string) =>
          metrics.series.find((one) => one.node === node && one.metric === metric)?.points;
        // Minute 13:00 began before the repetition (13:00:20): placed at 0; 13:01 at 40 s, 13:02 at 100 s.
        expect(points('rmqbench-cluster_1a2b3c', 'cpuPercent')).toEqual([
          [0, 30],
          [40, 60],
          [100, 45],
        ]);
        expect(points('rmqbench-cluster_4d5e6f', 'cpuPercent')).toEqual([
          [0, 10],
          [40, 20],
          [100, 15],
        ]);
        expect(points('rmqbench-cluster_1a2b3c', 'diskWriteBytesPerSecond')).toEqual([
          [0, 100],
          [40, 200],
          [100, 10],
        ]);
        expect(points('rmqbench-cluster_1a2b3c', 'networkBytesPerSecond')).toEqual([
          [0, 1100],
          [40, 2100],
          [100, 200],
        ]);
        expect(points('load-generator', 'cpuPercent')).toEqual([
          [0, 92],
          [40, 95],
          [100, 40],
        ]);
        expect(points('rmqbench-cluster_1a2b3c', 'memoryBytes')).toEqual([
          [0, 4 * GIB],
          [40, 6 * GIB],
          [100, 5 * GIB],
        ]);
        expect(points('load-generator', 'memoryBytes')).toEqual([
          [0, 2 * GIB],
          [40, 3 * GIB],
          [100, 3 * GIB],
        ]);
        expect(metrics.series.find((one) => one.metric === 'memoryBytes')?.unit).toBe('bytes');
        expect(metrics.incomplete).toBeUndefined();
        // Every request names the memory metric beside the others, with both aggregations.
        expect(arm.metricsQueries.map((query) => query.get('metricnames'))).toEqual(
          Array(2).fill('Percentage CPU,Disk Write Bytes,Network In Total,Network Out Total,Available Memory Bytes'),
        );

        const requests = arm.requests.filter((request) =>
          request.path.endsWith('/providers/Microsoft.Insights/metrics'),
        );
        expect(requests.map((request) => [request.path, request.apiVersion, request.authorization])).toEqual([
          [`${SCALE_SET}/providers/Microsoft.Insights/metrics`, '2023-10-01', 'Bearer fake-token'],
          [`${LOAD_GENERATOR}/providers/Microsoft.Insights/metrics`, '2023-10-01', 'Bearer fake-token'],
        ]);
      },
    );

    test(
      'a Kafka deployment: each broker VM read on its own (no VMName split) and keyed by its VM name, ' +
        'from the kafkaBrokerResourceIds array output as checkDeployment returns it',
      async () => {
        // The outputs of bicep/main.bicep with broker = 'kafka', as ARM returns them (an array output's value is the
        // array) and checkDeployment keeps them.
        const brokerIds = [1, 2, 3].map(
          (index) =>
            `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` +
            `/Microsoft.Compute/virtualMachines/rmqbench-kafka-${index}`,
        );
        const template = {
          ...EMPTY_TEMPLATE,
          outputs: {
            scaleSetResourceId: { type: 'string', value: '' },
            loadGeneratorResourceId: { type: 'string', value: LOAD_GENERATOR },
            kafkaBootstrapServers: { type: 'string', value: '10.20.1.10:9092,10.20.1.11:9092,10.20.1.12:9092' },
            kafkaBrokerResourceIds: { type: 'array', value: brokerIds },
            clusterVmSize: { type: 'string', value: 'Standard_F8s_v2' },
            loadGeneratorVmSize: { type: 'string', value: 'Standard_F16s_v2' },
          },
        };
        const checked = await deployed(clients, template);
        const kafkaOutputs = checked.outputs!;
        expect(JSON.parse(kafkaOutputs.kafkaBrokerResourceIds!)).toEqual(brokerIds);

        brokerIds.forEach((id, index) =>
          arm.metricValues.set(id.toLowerCase(), [
            { metric: 'Percentage CPU', timeStamp: minute(0), value: 10 * (index + 1) },
            { metric: 'Percentage CPU', timeStamp: minute(1), value: 10 * (index + 1) + 5 },
            { metric: 'Disk Write Bytes', timeStamp: minute(1), value: 6000 * (index + 1) },
            { metric: 'Network In Total', timeStamp: minute(1), value: 60_000 },
            { metric: 'Network Out Total', timeStamp: minute(1), value: 1200 },
            { metric: 'Available Memory Bytes', timeStamp: minute(1), value: (12 - index) * GIB },
          ]),
        );
        arm.metricValues.set(LOAD_GENERATOR.toLowerCase(), [
          { metric: 'Percentage CPU', timeStamp: minute(1), value: 50 },
        ]);
        const metrics = await azureMonitorHostMetrics(clients, kafkaOutputs, window);
        expect(metrics.incomplete).toBeUndefined();
        expect([...new Set(metrics.series.map((one) => one.node))]).toEqual([
          'rmqbench-kafka-1',
          'rmqbench-kafka-2',
          'rmqbench-kafka-3',
          'load-generator',
        ]);
        const points = (node: string, metric: string) =>
          metrics.series.find((one) => one.node === node && one.metric === metric)?.points;
        expect(points('rmqbench-kafka-1', 'cpuPercent')).toEqual([
          [0, 10],
          [40, 15],
        ]);
        expect(points('rmqbench-kafka-3', 'cpuPercent')).toEqual([
          [0, 30],
          [40, 35],
        ]);
        expect(points('rmqbench-kafka-2', 'diskWriteBytesPerSecond')).toEqual([[40, 200]]);
        expect(points('rmqbench-kafka-2', 'networkBytesPerSecond')).toEqual([[40, 1020]]);
        // A Standard_F8s_v2 broker has 16 GiB: used = 16 GiB - available.
        expect(brokerIds.map((_, index) => points(`rmqbench-kafka-${index + 1}`, 'memoryBytes'))).toEqual([
          [[40, 4 * GIB]],
          [[40, 5 * GIB]],
          [[40, 6 * GIB]],
        ]);
        expect(points('load-generator', 'cpuPercent')).toEqual([[40, 50]]);
        // One request per VM, none split by VMName (a single VM has no such dimension), none for a scale set.
        const requests = arm.requests.filter((request) =>
          request.path.endsWith('/providers/Microsoft.Insights/metrics'),
        );
        expect(requests.map((request) => request.path)).toEqual(
          [...brokerIds, LOAD_GENERATOR].map((id) => `${id}/providers/Microsoft.Insights/metrics`),
        );
        expect(arm.metricsQueries.every((query) => !query.has('$filter'))).toBe(true);
      },
    );

    test('two load generators (loadGeneratorResourceIds): each VM read on its own, under its generator', async () => {
      const generatorIds = [1, 2].map(
        (index) =>
          `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` +
          `/Microsoft.Compute/virtualMachines/rmqbench-loadgen-${index}`,
      );
      const template = {
        ...EMPTY_TEMPLATE,
        outputs: {
          scaleSetResourceId: { type: 'string', value: SCALE_SET },
          loadGeneratorResourceId: { type: 'string', value: generatorIds[0] },
          loadGeneratorResourceIds: { type: 'array', value: generatorIds },
          clusterVmSize: { type: 'string', value: 'Standard_D4s_v5' },
          loadGeneratorVmSize: { type: 'string', value: 'Standard_F16s_v2' },
        },
      };
      const checked = await deployed(clients, template);
      generatorIds.forEach((id, index) =>
        arm.metricValues.set(id.toLowerCase(), [{ metric: 'Percentage CPU', timeStamp: minute(1), value: 40 + index }]),
      );
      const metrics = await azureMonitorHostMetrics(clients, checked.outputs!, window);
      const cpu = (node: string) =>
        metrics.series.find((one) => one.node === node && one.metric === 'cpuPercent')?.points;
      // Each generator's own CPU, not the two added together under one node.
      expect(cpu('load-generator-lg-1')).toEqual([[40, 40]]);
      expect(cpu('load-generator-lg-2')).toEqual([[40, 41]]);
      expect(cpu('load-generator')).toBeUndefined();
    });

    test('a NATS deployment: each server VM read on its own from natsServerResourceIds', async () => {
      const serverIds = [1, 2, 3].map(
        (index) =>
          `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` +
          `/Microsoft.Compute/virtualMachines/rmqbench-nats-${index}`,
      );
      const template = {
        ...EMPTY_TEMPLATE,
        outputs: {
          scaleSetResourceId: { type: 'string', value: '' },
          loadGeneratorResourceId: { type: 'string', value: LOAD_GENERATOR },
          natsServerUrls: { type: 'string', value: 'nats://10.20.1.100:4222' },
          kafkaBrokerResourceIds: { type: 'array', value: [] },
          natsServerResourceIds: { type: 'array', value: serverIds },
          clusterVmSize: { type: 'string', value: 'Standard_F8s_v2' },
          loadGeneratorVmSize: { type: 'string', value: 'Standard_F16s_v2' },
        },
      };
      const checked = await deployed(clients, template);
      serverIds.forEach((id, index) =>
        arm.metricValues.set(id.toLowerCase(), [{ metric: 'Percentage CPU', timeStamp: minute(1), value: 20 + index }]),
      );
      arm.metricValues.set(LOAD_GENERATOR.toLowerCase(), [
        { metric: 'Percentage CPU', timeStamp: minute(1), value: 50 },
      ]);
      const metrics = await azureMonitorHostMetrics(clients, checked.outputs!, window);
      expect(metrics.incomplete).toBeUndefined();
      expect([...new Set(metrics.series.map((one) => one.node))]).toEqual([
        'rmqbench-nats-1',
        'rmqbench-nats-2',
        'rmqbench-nats-3',
        'load-generator',
      ]);
      expect(
        metrics.series.find((one) => one.node === 'rmqbench-nats-3' && one.metric === 'cpuPercent')?.points,
      ).toEqual([[40, 22]]);
    });

    test(
      'a Kafka deployment from before kafkaBrokerResourceIds keeps its load ' +
        "generator's series and says the brokers' were not read, naming the output",
      async () => {
        arm.metricValues.set(LOAD_GENERATOR.toLowerCase(), [
          { metric: 'Percentage CPU', timeStamp: minute(1), value: 50 },
        ]);
        const metrics = await azureMonitorHostMetrics(
          clients,
          {
            scaleSetResourceId: '',
            loadGeneratorResourceId: LOAD_GENERATOR,
            kafkaBootstrapServers: '10.20.1.10:9092',
            clusterVmSize: 'Standard_F8s_v2',
            loadGeneratorVmSize: 'Standard_F16s_v2',
          },
          window,
        );
        expect([...new Set(metrics.series.map((one) => one.node))]).toEqual(['load-generator']);
        expect(metrics.series.find((one) => one.metric === 'cpuPercent')).toEqual({
          node: 'load-generator',
          metric: 'cpuPercent',
          unit: 'percent',
          points: [[40, 50]],
        });
        expect(metrics.incomplete).toBe(
          "the brokers' host metrics were not read: the deployment lacks the outputs kafkaBrokerResourceIds and " +
            'natsServerResourceIds (deployed before them): deploy the current bicep/main.bicep',
        );
        expect(
          arm.requests.filter((request) => request.path.endsWith('/metrics')).map((request) => request.path),
        ).toEqual([`${LOAD_GENERATOR}/providers/Microsoft.Insights/metrics`]);
      },
    );

    test(
      'a RabbitMQ deployment from before kafkaBrokerResourceIds is read as ' +
        'before (the scale set split per VM), with nothing said missing',
      async () => {
        arm.metricValues.set(SCALE_SET.toLowerCase(), [
          { metric: 'Percentage CPU', vmName: 'rmqbench-cluster_1a2b3c', timeStamp: minute(1), value: 40 },
        ]);
        const metrics = await azureMonitorHostMetrics(clients, outputs, window);
        expect(metrics.incomplete).toBeUndefined();
        expect(metrics.series.find((one) => one.node === 'rmqbench-cluster_1a2b3c')?.points).toEqual([[40, 40]]);
      },
    );

    test(
      'without the VM-size outputs (a deployment from before them) or with a size of unknown ' +
        'memory, memory is not derived and the record says why; the other series are read',
      async () => {
        arm.metricValues.set(SCALE_SET.toLowerCase(), [
          { metric: 'Percentage CPU', vmName: 'rmqbench-cluster_1a2b3c', timeStamp: minute(1), value: 40 },
          { metric: 'Available Memory Bytes', vmName: 'rmqbench-cluster_1a2b3c', timeStamp: minute(1), value: 3 * GIB },
        ]);
        arm.metricValues.set(LOAD_GENERATOR.toLowerCase(), [
          { metric: 'Available Memory Bytes', timeStamp: minute(1), value: 30 * GIB },
        ]);
        const before = await azureMonitorHostMetrics(
          clients,
          { scaleSetResourceId: SCALE_SET, loadGeneratorResourceId: LOAD_GENERATOR },
          window,
        );
        expect(before.series.map((one) => [one.node, one.metric])).toEqual([['rmqbench-cluster_1a2b3c', 'cpuPercent']]);
        expect(before.incomplete).toBe(
          "memoryBytes of the cluster's VMs not derived: the deployment lacks the output " +
            'clusterVmSize (deployed before it): deploy the current bicep/main.bicep; ' +
            "memoryBytes of the load generator's not derived: the deployment lacks the output " +
            'loadGeneratorVmSize (deployed before it): deploy the current bicep/main.bicep',
        );
        const unknownSize = await azureMonitorHostMetrics(
          clients,
          { ...outputs, clusterVmSize: 'Standard_E8s_v5' },
          window,
        );
        expect(
          unknownSize.series.filter((one) => one.metric === 'memoryBytes').map((one) => [one.node, one.points]),
        ).toEqual([['load-generator', [[40, 2 * GIB]]]]);
        expect(unknownSize.incomplete).toBe(
          "memoryBytes of the cluster's VMs not derived: the VM size Standard_E8s_v5 (output " +
            'clusterVmSize) has no memory in core/cost/azure-vm-sizes.ts',
        );
      },
    );

    test(
      'a malformed kafkaBrokerResourceIds is an error naming the output; a broker VM ' +
        'whose metrics are refused fails the read naming that VM (every VM was asked)',
      async () => {
        const kafka = { scaleSetResourceId: '', loadGeneratorResourceId: LOAD_GENERATOR };
        await expect(
          azureMonitorHostMetrics(clients, { ...kafka, kafkaBrokerResourceIds: 'rmqbench-kafka-1' }, window),
        ).rejects.toThrow(
          'the deployment output kafkaBrokerResourceIds must be a JSON ' +
            'array of VM resource ids, got "rmqbench-kafka-1"',
        );
        await expect(
          azureMonitorHostMetrics(clients, { ...kafka, kafkaBrokerResourceIds: '[1,2]' }, window),
        ).rejects.toThrow(/kafkaBrokerResourceIds must be a JSON array of VM resource ids, got \[1,2\]/);
        await expect(
          azureMonitorHostMetrics(clients, { ...kafka, kafkaBrokerResourceIds: JSON.stringify([SCALE_SET]) }, window),
        ).rejects.toThrow(/expected a virtual machine resource id/);
        expect(arm.requests.filter((request) => request.path.endsWith('/metrics'))).toEqual([]);
        // The second "broker" is a load balancer: ARM (here the fake) refuses its metrics; the others were still asked.
        const good =
          `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` +
          `/Microsoft.Compute/virtualMachines/rmqbench-kafka-1`;
        const refused =
          `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` +
          `/Microsoft.Network/loadBalancers/virtualMachines/rmqbench-kafka-2`;
        await expect(
          azureMonitorHostMetrics(
            clients,
            { ...kafka, kafkaBrokerResourceIds: JSON.stringify([good, refused]) },
            window,
          ),
        ).rejects.toThrow(
          new RegExp(
            String.raw`Azure Monitor answered 400 for the metrics of .*loadBalancers\/virtualMachines` +
              String.raw`\/rmqbench-kafka-2: UnexpectedRequest`,
          ),
        );
        expect(
          arm.requests
            .filter((request) => request.path.endsWith('/metrics'))
            .map((request) => request.path)
            .sort(),
        ).toEqual([good, refused, LOAD_GENERATOR].map((id) => `${id}/providers/Microsoft.Insights/metrics`).sort());
      },
    );

    test(
      "broker series move to the VM names the host series use: the scale set's " +
        'VMs listed (as IngestRepetition does), rabbit@<computerName> -> VM name',
      async () => {
        arm.groups.set(GROUP, { location: 'westeurope', tags: {} });
        arm.vms.set(GROUP, [
          { name: 'rmqbench-loadgen', computerName: 'rmqbench-loadgen', timeCreated: '2026-11-23T12:00:00Z' },
          {
            name: 'rmqbench-cluster_1a2b3c',
            computerName: 'RMQBENCH000001',
            timeCreated: '2026-11-23T12:01:00Z',
            scaleSet: 'rmqbench-cluster',
          },
          {
            name: 'rmqbench-cluster_4d5e6f',
            computerName: 'RMQBENCH000002',
            timeCreated: '2026-11-23T12:01:01Z',
            scaleSet: 'rmqbench-cluster',
          },
        ]);
        arm.metricValues.set(SCALE_SET.toLowerCase(), [
          { metric: 'Percentage CPU', vmName: 'rmqbench-cluster_4d5e6f', timeStamp: minute(1), value: 50 },
        ]);
        const line = (t: number) =>
          `{"t":${t},"nodes":[{"name":"rabbit@RMQBENCH000001","running":true},` +
          `{"name":"rabbit@RMQBENCH000002","running":true}],"alarms":{"status":"ok"},` +
          `"queues":[{"name":"perf-test-1","node":"rabbit@RMQBENCH000002","messages":7}]}\n`;
        const startedAt = new Date(window.startedAt);
        const broker = brokerMetricsFromSamples(
          line(startedAt.getTime() / 1000 + 1) + line(startedAt.getTime() / 1000 + 2),
          startedAt,
        );
        const named = brokerSeriesOnHosts(broker.metrics, await azureClusterNodes(clients, GROUP));
        expect(named.unmatched).toEqual([]);
        const hostNodes = new Set(
          (await azureMonitorHostMetrics(clients, outputs, window)).series.map((one) => one.node),
        );
        expect(hostNodes.has('rmqbench-cluster_4d5e6f')).toBe(true);
        expect(
          named.metrics.series.find((one) => one.node === 'rmqbench-cluster_4d5e6f' && one.metric === 'queueDepth')
            ?.points,
        ).toEqual([
          [1, 7],
          [2, 7],
        ]);
        expect([...new Set(named.metrics.series.map((one) => one.node))]).toEqual([
          'rmqbench-cluster_1a2b3c',
          'rmqbench-cluster_4d5e6f',
        ]);
      },
    );

    test(
      'read before Azure Monitor had the last whole minute: the series are ' +
        'kept as read and the read is incomplete, naming where the data ends',
      async () => {
        // The scale set's VM has 13:00 and 13:01; the load generator only 13:00 (its 13:01 not ingested yet).
        arm.metricValues.set(
          SCALE_SET.toLowerCase(),
          [0, 1].map((index) => ({
            metric: 'Percentage CPU',
            vmName: 'rmqbench-cluster_1a2b3c',
            timeStamp: minute(index),
            value: 40 + index,
          })),
        );
        arm.metricValues.set(LOAD_GENERATOR.toLowerCase(), [
          { metric: 'Percentage CPU', timeStamp: minute(0), value: 90 },
        ]);
        const metrics = await azureMonitorHostMetrics(clients, outputs, window);
        expect(metrics.series.map((one) => [one.node, one.points])).toEqual([
          [
            'rmqbench-cluster_1a2b3c',
            [
              [0, 40],
              [40, 41],
            ],
          ],
          ['load-generator', [[0, 90]]],
        ]);
        expect(metrics.incomplete).toBe(
          'Azure Monitor had data up to 2026-11-23T13:01:00.000Z of a repetition ' +
            'that ended at 2026-11-23T13:02:40.000Z (platform metrics arrive late)',
        );
      },
    );

    test(
      'a deployment without the resource-id outputs, or a ' + 'refused request, is an error naming what was wrong',
      async () => {
        await expect(
          azureMonitorHostMetrics(clients, { loadGeneratorResourceId: LOAD_GENERATOR }, window),
        ).rejects.toThrow(/lacks the output\(s\) scaleSetResourceId: deploy the current bicep\/main.bicep/);
        const elsewhere = `/subscriptions/sub-1/resourceGroups/${GROUP}/providers/Microsoft.Network/loadBalancers/lb`;
        await expect(
          azureMonitorHostMetrics(
            clients,
            { scaleSetResourceId: elsewhere, loadGeneratorResourceId: LOAD_GENERATOR },
            window,
          ),
        ).rejects.toThrow(/Azure Monitor answered 400 for the metrics of .*loadBalancers\/lb: UnexpectedRequest/);
      },
    );
  },
);
