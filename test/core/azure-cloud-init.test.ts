import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  AZURE_BROKER_ENVIRONMENT_VARIABLES,
  azureBrokerEnvironment,
  azureBrokerParameters,
} from '../../core/cloud/azure-cloud-init';
import { generateBrokerConfig, policyCommandArgs } from '../../core/broker/broker-config';

describe('azureBrokerParameters', () => {
  test('returns the shared generator output for the external (join-script) backend, unchanged', () => {
    const options = { topology: { type: 'mirrored', mirrorTo: 2 }, rabbitmqVersion: '3.13.7', nodeCount: 3 } as const;
    const expected = generateBrokerConfig({ ...options, peerDiscovery: { backend: 'external' } });
    const parameters = azureBrokerParameters(options);
    expect(parameters.rabbitmqConf).toBe(expected.rabbitmqConf);
    expect(parameters.enabledPluginsFile).toBe(expected.enabledPluginsFile);
    expect(JSON.parse(parameters.policyCommandsJson)).toEqual(expected.policies.map(policyCommandArgs));
    expect(JSON.parse(parameters.policyCommandsJson)[0]).toEqual([
      'set_policy',
      '--apply-to',
      'queues',
      '--priority',
      '0',
      'rmqbench-mirroring',
      '^(perf-test|rmqbench)',
      '{"ha-mode":"exactly","ha-params":2,"ha-sync-mode":"automatic"}',
    ]);
  });

  test(
    'enables no peer-discovery plugin and sets no discovery ' + 'backend (Azure has none; the join script clusters)',
    () => {
      const parameters = azureBrokerParameters({
        topology: { type: 'quorum' },
        rabbitmqVersion: '4.1.2',
        nodeCount: 3,
      });
      expect(parameters.enabledPluginsFile).toBe('[rabbitmq_management].\n');
      expect(parameters.rabbitmqConf).not.toContain('peer_discovery');
      expect(parameters.policyCommandsJson).toBe('[]');
    },
  );

  test('rejects what the generator rejects, with its message', () => {
    expect(() =>
      azureBrokerParameters({
        topology: { type: 'mirrored', mirrorTo: 'all' },
        rabbitmqVersion: '4.0.1',
        nodeCount: 3,
      }),
    ).toThrow(/classic queue mirroring was removed in 4.0/);
    expect(() =>
      azureBrokerParameters({ topology: { type: 'classic' }, rabbitmqVersion: '3.13.7', nodeCount: 8 }),
    ).toThrow(/nodeCount must be between 1 and 7/);
  });

  test('the environment variables are the ones every tier .bicepparam file reads', () => {
    const environment = azureBrokerEnvironment(
      azureBrokerParameters({ topology: { type: 'classic' }, rabbitmqVersion: '3.13.7', nodeCount: 3 }),
    );
    expect(Object.keys(environment).sort()).toEqual(Object.values(AZURE_BROKER_ENVIRONMENT_VARIABLES).sort());
    for (const tier of ['low', 'high', 'compute-f4', 'compute-f8', 'compute-f16']) {
      const source = readFileSync(resolve(__dirname, `../../bicep/${tier}.bicepparam`), 'utf8');
      for (const [param, variable] of Object.entries(AZURE_BROKER_ENVIRONMENT_VARIABLES)) {
        expect(source).toContain(`param ${param} = readEnvironmentVariable('${variable}')`);
      }
    }
  });
});
