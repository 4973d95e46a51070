/**
 * CloudWatch's JSON protocol in front of moto's query protocol. The functions' bundles carry
 * @aws-sdk/client-cloudwatch 3.1164, which speaks AWS JSON 1.0 to CloudWatch (X-Amz-Target
 * `GraniteServiceVersion20100801.<Operation>`, the service model's awsQueryCompatible settings), while moto 5.2.5 with
 * the botocore 1.35.99 that .venv-tools pins serves CloudWatch's query protocol only ("Unsupported protocol [json] for
 * service cloudwatch", moto/core/request.py determine_request_protocol). Once the gateway has allowed a request, it is
 * carried out here with the same SDK client speaking the query protocol (@aws-sdk/core's AwsQueryProtocol, as
 * test/lambdas/ingest-host-metrics.integration.test.ts does), as the account's administrator, and its output or error
 * is answered in JSON 1.0: the shapes of both protocols are the same; only timestamps travel as epoch seconds in JSON
 * (Smithy, "AWS JSON 1.0 protocol": timestamps default to epoch-seconds).
 */
import * as cloudwatch from '@aws-sdk/client-cloudwatch';
import { AwsQueryProtocol } from '@aws-sdk/core/protocols';
import { TWIN_REGION } from './aws-requests';
import { ADMIN_ACCESS_KEY } from './moto-admin';

/** The members of CloudWatch's inputs that are timestamps (PutMetricData, GetMetricData, GetMetricStatistics). */
const TIMESTAMP_MEMBERS = new Set(['Timestamp', 'StartTime', 'EndTime', 'StartDate', 'EndDate']);

/** Epoch seconds of a JSON request's timestamp members as Dates, everywhere in the input. */
export function withDates(value: unknown, key = ''): unknown {
  if (typeof value === 'number' && TIMESTAMP_MEMBERS.has(key)) return new Date(value * 1000);
  if (Array.isArray(value)) return value.map((item) => withDates(item, key));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([member, inner]) => [member, withDates(inner, member)]));
  return value;
}

/** An output's Dates as epoch seconds, and without the SDK's $metadata. */
export function withEpochSeconds(value: unknown): unknown {
  if (value instanceof Date) return value.getTime() / 1000;
  if (Array.isArray(value)) return value.map(withEpochSeconds);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([member]) => member !== '$metadata')
        .map(([member, inner]) => [member, withEpochSeconds(inner)]),
    );
  return value;
}

export interface JsonAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export class CloudWatchJson {
  private readonly client: cloudwatch.CloudWatchClient;

  constructor(moto: string) {
    this.client = new cloudwatch.CloudWatchClient({
      endpoint: moto,
      region: TWIN_REGION,
      credentials: { accessKeyId: ADMIN_ACCESS_KEY, secretAccessKey: 'twin' },
      protocol: AwsQueryProtocol,
      maxAttempts: 1,
    });
  }

  /** One allowed JSON 1.0 request (its operation and parsed body), answered as CloudWatch would in JSON 1.0. */
  async answer(operation: string, input: Record<string, unknown>): Promise<JsonAnswer> {
    const Command = (cloudwatch as unknown as Record<string, unknown>)[`${operation}Command`] as
      (new (input: unknown) => cloudwatch.PutMetricDataCommand) | undefined;
    if (!Command) return jsonError(400, 'UnknownOperationException', `CloudWatch has no operation ${operation}`);
    try {
      const output = await this.client.send(new Command(withDates(input)));
      return {
        status: 200,
        headers: { 'content-type': 'application/x-amz-json-1.0' },
        body: JSON.stringify(withEpochSeconds(output)),
      };
    } catch (error) {
      const failure = error as Error & { $metadata?: { httpStatusCode?: number } };
      return jsonError(failure.$metadata?.httpStatusCode ?? 500, failure.name, failure.message);
    }
  }

  destroy(): void {
    this.client.destroy();
  }
}

/** An error in JSON 1.0 (`__type`, message), with the query-compatible code header CloudWatch adds. */
function jsonError(status: number, code: string, message: string): JsonAnswer {
  return {
    status,
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amzn-query-error': `${code};${status >= 500 ? 'Receiver' : 'Sender'}`,
    },
    body: JSON.stringify({ __type: code, message }),
  };
}
