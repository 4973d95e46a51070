import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommandInvocationCommand, SSMClient } from '@aws-sdk/client-ssm';
import { withTransientErrors, isTransientError } from '../../lambdas/shared/transient-errors';
import { FaultInjectedError } from '../../local/workflow-runner';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { STATE, TRANSIENT_ERROR } from '../../state-machines/states';
import { executeWorkflow } from './workflow-harness';

/**
 * Issue 22, item 5: an error that outlived the SDK's own attempts (a throttled GetCommandInvocation) reaches the
 * workflow under TRANSIENT_ERROR and is retried there; the repetition succeeds. An injected fault still fails at once.
 * The throttling comes from the real SSM client against an endpoint that answers as SSM does when it throttles.
 */
const plan = {
  name: 'retry',
  clusters: [{ name: 'one', nodes: 1, topology: { type: 'classic' }, instanceType: 'c5.xlarge' }],
  workloads: [{ name: 'w', durationSeconds: 10 }],
};

let server: Server;
let endpoint: string;
let throttleNext = 0;
beforeAll(async () => {
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.setHeader('content-type', 'application/x-amz-json-1.1');
      if (throttleNext > 0) {
        throttleNext--;
        response.statusCode = 400;
        response.end(JSON.stringify({ __type: 'ThrottlingException', message: 'Rate exceeded' }));
        return;
      }
      response.end(
        JSON.stringify({ Status: 'Success', StandardOutputContent: '', StandardErrorContent: '', ResponseCode: 0 }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

/**
 * A CheckRepetition whose GetCommandInvocation is the real SDK call (one attempt per invocation: the SDK's own retries
 * spent).
 */
const checkRepetition = () => {
  const ssm = new SSMClient({
    endpoint,
    region: 'us-east-1',
    maxAttempts: 1,
    credentials: { accessKeyId: 'a', secretAccessKey: 's' },
  });
  return withTransientErrors(async (event: { item: ScheduledRepetition }) => {
    const invocation = await ssm.send(
      new GetCommandInvocationCommand({ CommandId: 'c', InstanceId: 'i-0123456789abcdef0' }),
    );
    return { done: invocation.Status === 'Success', rawKey: event.item.rawKey };
  });
};

describe('transient errors are retried by the workflow', () => {
  test(
    'a ThrottlingException twice, then success: the ' + 'repetition succeeds, CheckRepetition ran three times',
    async () => {
      throttleNext = 2;
      const run = await executeWorkflow(
        { plan, target: 'aws', runId: 'throttled' },
        { [STATE.checkRepetition]: checkRepetition() },
      );
      expect(throttleNext).toBe(0);
      expect(run.attempts[STATE.checkRepetition]).toBe(3);
      expect(run.succeeded).toBe(true);
      expect(run.finished?.clusterResults).toEqual([expect.objectContaining({ failed: false })]);
    },
  );

  test('a throttle that never ends fails the cluster after 6 retries, and it is torn down', async () => {
    throttleNext = 100;
    const run = await executeWorkflow(
      { plan, target: 'aws', runId: 'throttled-forever' },
      { [STATE.checkRepetition]: checkRepetition() },
    );
    throttleNext = 0;
    expect(run.attempts[STATE.checkRepetition]).toBe(7);
    expect(run.tasks).toContain(STATE.teardownCluster);
    expect(run.finished?.clusterResults).toEqual([expect.objectContaining({ failed: true })]);
  });

  test('an injected fault (--fail-at) fails at once: one attempt, then teardown', async () => {
    const run = await executeWorkflow(
      { plan, target: 'aws', runId: 'injected' },
      {
        [STATE.checkRepetition]: () => {
          throw new FaultInjectedError(STATE.checkRepetition);
        },
      },
    );
    expect(run.attempts[STATE.checkRepetition]).toBe(1);
    expect(run.tasks).toContain(STATE.teardownCluster);
    expect(run.finished?.clusterResults).toEqual([expect.objectContaining({ failed: true })]);
  });

  test('an error of the function itself (a missed deadline) is not retried', async () => {
    const run = await executeWorkflow(
      { plan, target: 'aws', runId: 'deadline' },
      {
        [STATE.checkRepetition]: withTransientErrors(async () => {
          throw new Error('PerfTest for w #1 did not finish by 2025-01-01T00:00:00Z (InProgress)');
        }),
      },
    );
    expect(run.attempts[STATE.checkRepetition]).toBe(1);
    expect(run.finished?.clusterResults).toEqual([expect.objectContaining({ failed: true })]);
  });
});

describe('isTransientError', () => {
  test(
    'SDK throttling, 5xx, network resets (also as a fetch ' +
      'cause) and Azure 429s are transient; plain errors are not',
    () => {
      expect(
        isTransientError(Object.assign(new Error('x'), { name: 'Throttling', $metadata: { httpStatusCode: 400 } })),
      ).toBe(true);
      expect(
        isTransientError(
          Object.assign(new Error('x'), { name: 'InternalFailure', $metadata: { httpStatusCode: 500 } }),
        ),
      ).toBe(true);
      expect(
        isTransientError(
          new TypeError('fetch failed', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) }),
        ),
      ).toBe(true);
      expect(isTransientError(Object.assign(new Error('busy'), { name: 'RestError', statusCode: 429 }))).toBe(true);
      expect(
        isTransientError(
          Object.assign(new Error('x'), { name: 'ValidationError', $metadata: { httpStatusCode: 400 } }),
        ),
      ).toBe(false);
      expect(
        isTransientError(
          Object.assign(new Error('quota'), { name: 'LimitExceededException', $metadata: { httpStatusCode: 400 } }),
        ),
      ).toBe(false);
      expect(isTransientError(new Error('stack failed'))).toBe(false);
    },
  );

  test('the wrapper renames only transient errors, keeping the original in the message', async () => {
    const throttled = withTransientErrors(async () => {
      throw Object.assign(new Error('Rate exceeded'), {
        name: 'ThrottlingException',
        $metadata: { httpStatusCode: 400 },
      });
    });
    await expect(throttled()).rejects.toMatchObject({
      name: TRANSIENT_ERROR,
      message: 'ThrottlingException: Rate exceeded',
    });
  });
});
