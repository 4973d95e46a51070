import { commandFailureExcerpt } from '../../core/cloud/command-output';

/** The shape PerfTest 2.22 printed on a CI run when its connection through the load balancer failed. */
const PERFTEST_TRACE = [
  'id: test-105931-337, starting consumer #0',
  'Main thread caught exception: java.io.IOException',
  'java.io.IOException',
  '\tat com.rabbitmq.client.impl.AMQChannel.wrap(AMQChannel.java:140)',
  '\tat com.rabbitmq.client.impl.AMQConnection.start(AMQConnection.java:336)',
  'Caused by: com.rabbitmq.client.ShutdownSignalException: connection error; protocol method: ' +
    "#method<connection.close>(reply-code=530, reply-text=NOT_ALLOWED - access to vhost '/' refused for user " +
    "'rmqbench-run', class-id=10, method-id=40)",
  ...Array.from({ length: 40 }, (_, i) => `\tat com.rabbitmq.perf.MulticastSet.run${i}(MulticastSet.java:${261 + i})`),
  '\t... 7 more',
  'test stopped',
].join('\n');

describe('commandFailureExcerpt', () => {
  test('a Java stack trace: the exception and its cause first, then the last line that is not a frame', () => {
    const excerpt = commandFailureExcerpt(PERFTEST_TRACE);
    expect(excerpt).toBe(
      'java.io.IOException | Caused by: com.rabbitmq.client.ShutdownSignalException: connection error; protocol ' +
        "method: #method<connection.close>(reply-code=530, reply-text=NOT_ALLOWED - access to vhost '/' refused for " +
        "user 'rmqbench-run', class-id=10, method-id=40) | test stopped",
    );
    expect(excerpt).not.toContain('MulticastSet');
  });

  test('without a trace: the tail, as before', () => {
    const long =
      `${'x'.repeat(2000)}\n` + 'An error occurred (AccessDeniedException) when calling the GetSecretValue operation';
    expect(commandFailureExcerpt(long)).toBe(long.slice(-1000));
    expect(commandFailureExcerpt('  short  \n')).toBe('short');
    expect(commandFailureExcerpt(undefined)).toBe('');
  });

  test('frames without a recognisable exception line: the tail', () => {
    const frames = Array.from({ length: 100 }, (_, i) => `\tat a.B.c${i}(B.java:${i})`).join('\n');
    expect(commandFailureExcerpt(frames, 200)).toBe(frames.slice(-200));
  });

  test('Exception in thread and Error lines count; the excerpt keeps to maxChars', () => {
    const trace = [
      'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space',
      '\tat java.base/java.util.Arrays.copyOf(Arrays.java:3512)',
    ].join('\n');
    expect(commandFailureExcerpt(trace)).toBe('Exception in thread "main" java.lang.OutOfMemoryError: Java heap space');
    const long = `java.lang.IllegalStateException: ${'y'.repeat(3000)}\n\tat a.B.c(B.java:1)`;
    const cut = commandFailureExcerpt(long, 100);
    expect(cut).toHaveLength(100);
    expect(cut.startsWith('java.lang.IllegalStateException: yyy')).toBe(true);
    expect(cut.endsWith('…')).toBe(true);
  });
});
