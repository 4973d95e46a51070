import { CfnResource } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * Records in a resource's CloudFormation metadata that a checkov check does not apply to it, and why: checkov reads
 * `Metadata.checkov.skip` ([{ id, comment }]) of each resource (checkov 3.x, checkov/cloudformation/context_parser.py
 * collect_skip_comments), so a scan of the synthesized template reports it as skipped with the comment instead of
 * failed.
 * The same decisions as the cdk-nag acknowledgements beside them, for the other scanner the field uses.
 */
export function skipCheckov(
  scope: IConstruct,
  skips: readonly { readonly id: string; readonly comment: string }[],
): void {
  const resource = scope instanceof CfnResource ? scope : (scope.node.defaultChild as CfnResource | undefined);
  if (!(resource instanceof CfnResource))
    throw new Error(`${scope.node.path} has no CloudFormation resource to record checkov skips on`);
  const existing =
    (resource.getMetadata('checkov') as { skip?: { id: string; comment: string }[] } | undefined)?.skip ?? [];
  resource.addMetadata('checkov', { skip: [...existing, ...skips] });
}

/** Reasons shared by several constructs. */
export const CHECKOV_REASON = {
  awsManagedEncryption:
    'Encrypted at rest with the AWS managed key; a customer managed key would add a monthly key charge and a ' +
    'key policy to every benchmark deployment without protecting more than benchmark results.',
  userDataWithoutSecrets:
    "False positive: checkov's AWS-secret-key pattern (any 40-character run of [A-Za-z0-9/+=]) matches a Maven " +
    'Central path in the download list (e.g. org/maven2/io/dropwizard/metrics/metrics). The user data holds no ' +
    'secret: credentials are read from Secrets Manager at boot.',
  logGroupKms:
    'CloudWatch Logs encrypts log data at rest by default; the boot and flow logs hold no secrets (scripts ' +
    'mask them), and a customer managed key would add a key charge per deployment.',
} as const;
