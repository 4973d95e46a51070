import { Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * The text cdk-nag uses for a resource in a finding id such as `AwsSolutions-IAM5[Resource::...]`
 * (its flattenCfnReference: `<Logical.Arn>` for GetAtt, `<Name>` for Ref, joins concatenated).
 * Computing it lets a suppression name the one resource it covers instead of every wildcard.
 */
export function nagResourceText(scope: IConstruct, value: string): string {
  return flatten(Stack.of(scope).resolve(value));
}

function flatten(node: unknown): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return node.replace(/\$\{/g, '<').replace(/}/g, '>');
  if (typeof node === 'object' && node !== null) {
    const record = node as Record<string, unknown>;
    if (Array.isArray(record['Fn::Join'])) {
      const [delimiter, items] = record['Fn::Join'] as [string, unknown[]];
      return items.map(flatten).join(delimiter);
    }
    if (record['Fn::Sub'] !== undefined) return flatten(record['Fn::Sub']);
    if (Array.isArray(record['Fn::GetAtt'])) {
      const [resource, attribute] = record['Fn::GetAtt'] as [unknown, unknown];
      return `<${flatten(resource)}.${flatten(attribute)}>`;
    }
    if (record['Fn::ImportValue'] !== undefined) return flatten(record['Fn::ImportValue']);
    if (record.Ref !== undefined) return `<${flatten(record.Ref)}>`;
  }
  return JSON.stringify(node);
}
