import { spawnSync } from 'node:child_process';
import { azureBrokerEnvironment, azureBrokerParameters } from '../../core/cloud/azure-cloud-init';
import { brokerConfigCommand, shellQuote } from '../../bin/broker-config-command';

describe('rmqbench broker-config --target azure', () => {
  test('prints the shared generator output as shell exports that evaluate back to the same values', () => {
    const output = brokerConfigCommand({
      target: 'azure',
      topology: 'mirrored',
      mirrorTo: '2',
      nodes: '3',
      rabbitmqVersion: '3.13.7',
      json: false,
    });
    const expected = azureBrokerEnvironment(
      azureBrokerParameters({ topology: { type: 'mirrored', mirrorTo: 2 }, rabbitmqVersion: '3.13.7', nodeCount: 3 }),
    );
    const script =
      `${output}\nnode -e 'console.log(JSON.stringify({a:process.env.RMQBENCH_RABBITMQ_CONF,` +
      `b:process.env.RMQBENCH_ENABLED_PLUGINS_FILE,c:process.env.RMQBENCH_POLICY_COMMANDS_JSON}))'`;
    const evaluated = spawnSync('bash', ['-c', script], { encoding: 'utf8' });
    expect(JSON.parse(evaluated.stdout)).toEqual({
      a: expected.RMQBENCH_RABBITMQ_CONF,
      b: expected.RMQBENCH_ENABLED_PLUGINS_FILE,
      c: expected.RMQBENCH_POLICY_COMMANDS_JSON,
    });
    expect(expected.RMQBENCH_POLICY_COMMANDS_JSON).toContain('ha-params');
  });

  test('quotes single quotes safely', () => {
    expect(spawnSync('bash', ['-c', `echo ${shellQuote("it's $HOME")}`], { encoding: 'utf8' }).stdout).toBe(
      "it's $HOME\n",
    );
  });

  test('bad options name the option', () => {
    const base = { target: 'azure', topology: 'quorum', nodes: '3', rabbitmqVersion: '4.1.4', json: true };
    expect(() => brokerConfigCommand({ ...base, topology: 'lazy' })).toThrow(/--topology.*type/);
    expect(() => brokerConfigCommand({ ...base, topology: 'mirrored' })).toThrow(/removed in 4\.0/);
    expect(() => brokerConfigCommand({ ...base, nodes: 'three' })).toThrow(/--nodes must be a whole number/);
    expect(() => brokerConfigCommand({ ...base, target: 'aws' })).toThrow(/only "azure"/);
    expect(JSON.parse(brokerConfigCommand(base)).rabbitmqConf).toContain('listeners.tcp.default = 5672');
  });
});
