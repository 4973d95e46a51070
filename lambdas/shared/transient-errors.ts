import { TRANSIENT_ERROR } from '../../state-machines/states';

/**
 * Errors a call may meet once and not again, as the AWS SDK classifies them (@smithy/core 3.x,
 * submodules/retry/service-error-classification/constants.js): throttling codes, transient codes, 5xx and network
 * resets. The SDK retries them itself (3 attempts by default); one that survives those attempts reaches the workflow.
 * CloudFormation's LimitExceededException is left out: it is a quota (too many stacks), not a throttle.
 */
const THROTTLING_NAMES = [
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
];
const TRANSIENT_NAMES = ['TimeoutError', 'RequestTimeout', 'RequestTimeoutException'];
const TRANSIENT_STATUS_CODES = [429, 500, 502, 503, 504];
const NETWORK_CODES = [
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
];

interface ErrorFields {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly $retryable?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
  /** Azure SDK RestError. */
  readonly statusCode?: unknown;
  /** fetch's TypeError('fetch failed') carries the socket error here. */
  readonly cause?: unknown;
}

/**
 * True when `error` (an AWS or Azure SDK error, or a network error, possibly as a fetch cause) is worth trying again.
 */
export function isTransientError(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 3) return false;
  const fields = error as ErrorFields;
  if (fields.$retryable) return true;
  if (
    typeof fields.name === 'string' &&
    (THROTTLING_NAMES.includes(fields.name) || TRANSIENT_NAMES.includes(fields.name))
  )
    return true;
  const status = fields.$metadata?.httpStatusCode ?? fields.statusCode;
  if (typeof status === 'number' && TRANSIENT_STATUS_CODES.includes(status)) return true;
  if (typeof fields.code === 'string' && NETWORK_CODES.includes(fields.code)) return true;
  return isTransientError(fields.cause, depth + 1);
}

/**
 * A handler whose transient errors reach Step Functions under one name, TRANSIENT_ERROR, which the workflow retries
 * with
 * back-off (state-machines/phases.ts). Lambda reports a Node.js function's error with the error's name as its type, and
 * Step Functions matches Retry and Catch on that type
 * (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html). Every other error keeps its name
 * and fails the state at once, as an injected fault must.
 */
export function withTransientErrors<Args extends unknown[], Result>(
  handler: (...args: Args) => Promise<Result>,
): (...args: Args) => Promise<Result> {
  return async (...args: Args) => {
    try {
      return await handler(...args);
    } catch (error) {
      if (!isTransientError(error)) throw error;
      const original = error as Error;
      const transient = new Error(`${original.name}: ${original.message}`, { cause: error });
      transient.name = TRANSIENT_ERROR;
      throw transient;
    }
  };
}
