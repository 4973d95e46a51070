import {
  CfnCondition,
  CfnOutput,
  CfnParameter,
  Fn,
  Stack,
  Tags,
  Validations,
  type ICfnConditionExpression,
} from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import { MAX_LOAD_GENERATORS } from '../core/loadgen/load-generator-count';
import { LOAD_GENERATOR_INDEX_TAG, type LoadGenerator } from './LoadGenerator';
import { loadGeneratorUserData } from './user-data/load-generator';

/** The cluster template's parameter that says how many of its load generators are launched (issue 27). */
export const LOAD_GENERATOR_COUNT_PARAMETER = 'LoadGeneratorCount';

/** The template condition under which the load generator at `index` (0-based, 1 or more) exists. */
export const loadGeneratorCondition = (index: number) => `LoadGeneratorCountAbove${index}`;

/**
 * Makes the controller's cluster template launch LoadGeneratorCount of `loadGenerator`'s instances, a LoadGenerator
 * built with count MAX_LOAD_GENERATORS: the template is synthesized once and the count chosen per launch.
 *
 * CloudFormation has no numeric comparison among its condition functions (Fn::And, Fn::Equals, Fn::If, Fn::Not,
 * Fn::Or; docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/
 * intrinsic-function-reference-conditions.html),
 * so "count > i" is Fn::Or over Fn::Equals of each count from i + 1 to 10 (Fn::Or takes 2 to 10 conditions, there;
 * at most 9 here) and a single Fn::Equals for i = 9. A Ref to a Number parameter is a string, so the parameter takes
 * AllowedValues "1" … "10" rather than a MinValue/MaxValue, which would let "02" through and match nothing.
 *
 * With count 1 the deployed resources are those of a LoadGenerator of count 1: instances 1… and their instance
 * profiles do not exist, instance 0 has no index tag, and its user data (Fn::If on the same condition) is the
 * single-generator script without LOAD_GENERATOR_INDEX/COUNT. With more, every instance's env file says its index and
 * the parameter's count. The `InstanceIds` output lists the instances that exist, by index, comma-separated.
 */
export function launchLoadGeneratorsByParameter(
  stack: Stack,
  loadGenerator: LoadGenerator,
  input: { readonly resultsBucketName: string },
): CfnParameter {
  if (loadGenerator.count !== MAX_LOAD_GENERATORS)
    throw new Error(`the cluster template's LoadGenerator must be built with count ${MAX_LOAD_GENERATORS}`);
  const count = new CfnParameter(stack, LOAD_GENERATOR_COUNT_PARAMETER, {
    type: 'Number',
    default: '1',
    allowedValues: Array.from({ length: MAX_LOAD_GENERATORS }, (_, index) => String(index + 1)),
    description:
      `Number of load generators, 1 to ${MAX_LOAD_GENERATORS} (the plan cluster's loadGenerators); ` +
      'the workload is split across them by queue',
  });
  const conditions = Array.from({ length: MAX_LOAD_GENERATORS - 1 }, (_, at) => {
    const index = at + 1;
    const equals: ICfnConditionExpression[] = [];
    for (let value = index + 1; value <= MAX_LOAD_GENERATORS; value++)
      equals.push(Fn.conditionEquals(count.valueAsString, String(value)));
    const expression = equals.length === 1 ? equals[0]! : Fn.conditionOr(...equals);
    return new CfnCondition(stack, loadGeneratorCondition(index), { expression });
  });
  const userData = (generator?: { index: number; count: string }) =>
    Fn.base64(
      loadGeneratorUserData({
        resultsBucketName: input.resultsBucketName,
        resultsPrefix: loadGenerator.resultsPrefix,
        ...(generator ? { generator } : {}),
      }).render(),
    );
  loadGenerator.instances.forEach((instance, index) => {
    const resource = instance.node.defaultChild as ec2.CfnInstance;
    const generator = { index, count: count.valueAsString };
    if (index === 0) {
      // Exactly the single generator's instance with count 1: no index tag, no index in its env file.
      Tags.of(instance).remove(LOAD_GENERATOR_INDEX_TAG);
      resource.userData = Fn.conditionIf(conditions[0]!.logicalId, userData(generator), userData()).toString();
      return;
    }
    const condition = conditions[index - 1]!;
    resource.cfnOptions.condition = condition;
    resource.userData = userData(generator);
    for (const child of instance.node.children)
      if (child instanceof iam.CfnInstanceProfile) child.cfnOptions.condition = condition;
  });
  const ids = loadGenerator.node.tryFindChild('InstanceIds');
  if (!(ids instanceof CfnOutput)) throw new Error('the LoadGenerator has no InstanceIds output to list them in');
  ids.value = Fn.join('', [
    loadGenerator.instanceIds[0]!,
    ...loadGenerator.instanceIds
      .slice(1)
      .map((id, at) => Fn.conditionIf(conditions[at]!.logicalId, Fn.join('', [',', id]), '').toString()),
  ]);
  Validations.of(stack).acknowledge({
    id: 'CloudFormation-Validate::W1001',
    reason:
      'Each conditional instance is referenced only inside an Fn::If on its own condition; cfn-lint, which ' +
      'resolves Fn::If, reports nothing.',
  });
  return count;
}
