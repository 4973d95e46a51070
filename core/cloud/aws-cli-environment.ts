/**
 * The environment every AWS CLI call of a boot script (user data) or of a Run Command script on an instance runs with:
 * - throttling and transient errors retried, standard mode, 8 attempts
 *   (https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-retries.html);
 * - the instance profile's credentials read from IMDS with a 5 s timeout and 5 attempts instead of the default 1 s and
 *   1 attempt (`AWS_METADATA_SERVICE_TIMEOUT`, `AWS_METADATA_SERVICE_NUM_ATTEMPTS`:
 *   https://docs.aws.amazon.com/sdkref/latest/guide/feature-ec2-instance-metadata.html). IMDS throttles queries per
 *   instance, credentials included
 *   (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html#instancedata-throttling), and a
 *   boot's calls come close together; with one 1 s attempt, one slow answer fails the call with "Unable to locate
 *   credentials". A CI rehearsal's cloud twin lost a Kafka broker's SUCCESS signal exactly so, its boot otherwise
 *   complete, and CloudFormation would have rolled the stack back.
 */
export const AWS_CLI_SETTINGS =
  'AWS_RETRY_MODE=standard AWS_MAX_ATTEMPTS=8 AWS_METADATA_SERVICE_TIMEOUT=5 AWS_METADATA_SERVICE_NUM_ATTEMPTS=5';

/** AWS_CLI_SETTINGS for the rest of a script. */
export const AWS_CLI_ENVIRONMENT = `export ${AWS_CLI_SETTINGS}`;
