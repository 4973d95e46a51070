import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CONTROLLER_DEFAULT_RELEASE,
  clusterTemplateFileName,
  LOAD_GENERATOR_INDEX_TAG,
  synthesizeClusterTemplates,
} from '../../cdk';
import { LOAD_GENERATOR_COUNT_PARAMETER } from '../../cdk/cluster-template-load-generators';

/**
 * The controller's RabbitMQ cluster template launches LoadGeneratorCount load generators (issue 27): its conditions
 * are resolved here for a count, as CloudFormation would, to see which resources exist and what they hold.
 */
type Resource = { Type: string; Condition?: string; Properties: Record<string, unknown> };
type ClusterTemplate = {
  Parameters: Record<string, Record<string, unknown>>;
  Conditions: Record<string, unknown>;
  Resources: Record<string, Resource>;
  Outputs: Record<string, { Value: unknown }>;
};

const template = JSON.parse(
  readFileSync(join(synthesizeClusterTemplates(), clusterTemplateFileName(CONTROLLER_DEFAULT_RELEASE)), 'utf8'),
) as ClusterTemplate;

/** Fn::Equals / Fn::Or / Fn::And / Fn::Not / Condition with the parameter's value as the string a Ref gives. */
function condition(expression: unknown, count: number): boolean {
  const node = expression as Record<string, unknown>;
  if (typeof expression === 'string' || 'Condition' in node)
    return condition(
      template.Conditions[(typeof expression === 'string' ? expression : node.Condition) as string],
      count,
    );
  const value = (operand: unknown) =>
    JSON.stringify(operand) === JSON.stringify({ Ref: LOAD_GENERATOR_COUNT_PARAMETER }) ? String(count) : operand;
  if ('Fn::Equals' in node) {
    const [left, right] = node['Fn::Equals'] as unknown[];
    return value(left) === value(right);
  }
  if ('Fn::Or' in node) return (node['Fn::Or'] as unknown[]).some((part) => condition(part, count));
  if ('Fn::And' in node) return (node['Fn::And'] as unknown[]).every((part) => condition(part, count));
  if ('Fn::Not' in node) return !condition((node['Fn::Not'] as unknown[])[0], count);
  throw new Error(`not a condition: ${JSON.stringify(expression)}`);
}

/** Resolves Fn::If (and drops AWS::NoValue) in `value` for `count`. */
function resolveIfs(value: unknown, count: number): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveIfs(item, count));
  if (value === null || typeof value !== 'object') return value;
  const node = value as Record<string, unknown>;
  if ('Fn::If' in node) {
    const [name, whenTrue, whenFalse] = node['Fn::If'] as [string, unknown, unknown];
    return resolveIfs(condition(name, count) ? whenTrue : whenFalse, count);
  }
  return Object.fromEntries(Object.entries(node).map(([key, item]) => [key, resolveIfs(item, count)]));
}

function deployed(count: number) {
  const resources = Object.entries(template.Resources).filter(
    ([, resource]) => resource.Condition === undefined || condition(resource.Condition, count),
  );
  const ofType = (type: string) => resources.filter(([, resource]) => resource.Type === type);
  const instances = ofType('AWS::EC2::Instance').filter(([, resource]) =>
    JSON.stringify(resource.Properties.Tags).includes('load-generator'),
  );
  return { resources, ofType, instances };
}

const userDataText = (resource: Resource, count: number) => {
  const userData = resolveIfs(resource.Properties.UserData, count) as {
    'Fn::Base64': { 'Fn::Join': [string, unknown[]] };
  };
  return userData['Fn::Base64']['Fn::Join'][1]
    .map((part) => (typeof part === 'string' ? part : JSON.stringify(part)))
    .join('');
};
const indexTag = (resource: Resource) =>
  (resource.Properties.Tags as { Key: string; Value: string }[]).find((tag) => tag.Key === LOAD_GENERATOR_INDEX_TAG)
    ?.Value;

describe('the cluster template launches LoadGeneratorCount load generators', () => {
  test('LoadGeneratorCount takes "1" to "10", default 1', () => {
    expect(template.Parameters[LOAD_GENERATOR_COUNT_PARAMETER]).toMatchObject({
      Type: 'Number',
      Default: '1',
      AllowedValues: ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'],
    });
  });

  test('with 1: one load generator, no index tag or index in its env file, one instance profile (as before)', () => {
    const { instances, ofType } = deployed(1);
    expect(instances).toHaveLength(1);
    const [, instance] = instances[0]!;
    expect(indexTag(instance)).toBeUndefined();
    const text = userDataText(instance, 1);
    expect(text).toContain('/etc/rmqbench/load-generator.env');
    expect(text).not.toContain('LOAD_GENERATOR_INDEX');
    // The nodes' and the load generator's instance profiles: the node group's launch template has one too.
    expect(ofType('AWS::IAM::InstanceProfile').filter(([id]) => id.startsWith('LoadGenerator'))).toHaveLength(1);
    const ids = Object.entries(template.Outputs).find(([key]) => key.startsWith('LoadGeneratorInstanceIds'))!;
    expect(resolveIfs(ids[1].Value, 1)).toEqual({
      'Fn::Join': ['', [{ Ref: instances[0]![0] }, ...Array.from({ length: 9 }, () => '')]],
    });
  });

  test('with 3: three load generators, each with its index (tag, env file) and the count, listed in order', () => {
    const { instances, ofType } = deployed(3);
    expect(instances).toHaveLength(3);
    expect(ofType('AWS::IAM::InstanceProfile').filter(([id]) => id.startsWith('LoadGenerator'))).toHaveLength(3);
    const byIndex = instances
      .map(([id, resource]) => ({
        id,
        resource,
        index: userDataText(resource, 3).match(
          /printf 'LOAD_GENERATOR_INDEX=%s\\nLOAD_GENERATOR_COUNT=%s\\n' (\d+) (\S+)/,
        ),
      }))
      .sort((a, b) => Number(a.index![1]) - Number(b.index![1]));
    expect(byIndex.map((one) => one.index![1])).toEqual(['0', '1', '2']);
    // The count is the parameter's value at boot, not the template's maximum.
    for (const one of byIndex) expect(one.index![2]).toBe(JSON.stringify({ Ref: LOAD_GENERATOR_COUNT_PARAMETER }));
    expect(byIndex.slice(1).map((one) => indexTag(one.resource))).toEqual(['1', '2']);
    const ids = Object.entries(template.Outputs).find(([key]) => key.startsWith('LoadGeneratorInstanceIds'))!;
    const joined = resolveIfs(ids[1].Value, 3) as { 'Fn::Join': [string, unknown[]] };
    expect(JSON.stringify(joined)).toBe(
      JSON.stringify({
        'Fn::Join': [
          '',
          [
            { Ref: byIndex[0]!.id },
            { 'Fn::Join': ['', [',', { Ref: byIndex[1]!.id }]] },
            { 'Fn::Join': ['', [',', { Ref: byIndex[2]!.id }]] },
            ...Array.from({ length: 7 }, () => ''),
          ],
        ],
      }),
    );
  });

  test('with 10: ten; every resource that is not a load generator exists whatever the count', () => {
    expect(deployed(10).instances).toHaveLength(10);
    const others = (count: number) =>
      deployed(count)
        .resources.map(([id]) => id)
        .filter((id) => !id.startsWith('LoadGeneratorInstance'));
    expect(others(1)).toEqual(others(10));
  });
});
