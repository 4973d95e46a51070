import { BROKER_SAMPLE_PATHS, BROKER_SAMPLES_FILE } from '../../core/broker/broker-samples';

/**
 * Seconds the sampler may outlive the repetition's duration before it stops by itself (JVM start, PerfTest's drain).
 */
export const SAMPLER_GRACE_SECONDS = 90;
/**
 * Each management API request may take this long (curl --max-time); a slow API makes the samples sparser, never late.
 */
const REQUEST_TIMEOUT_SECONDS = 2;

/**
 * Shell lines that start the management API sampler in the background of a run script (AWS Run Command and Azure
 * managed Run Command alike): once per second it reads BROKER_SAMPLE_PATHS from $MANAGEMENT_URL as the per-run
 * benchmark user ($BENCH_USER, $BENCH_PASS: its `monitoring` tag lets it read /api/nodes) and appends one JSON line
 * {"t":<epoch seconds>,"nodes":...,"alarms":...,"queues":...} to BROKER_SAMPLES_FILE in the working directory, which
 * core/broker/broker-samples.ts parses. The credentials reach curl as a config line on stdin (printf is a shell
 * builtin), never
 * in a process argument. A request that gets no answer is sent once more at once, on a new connection: behind the
 * Network Load Balancer a new connection can reach another node, while a killed node still gets new connections until
 * the load balancer's health check takes it out (3 failed checks 10 s apart: cdk/RabbitMqCluster.ts
 * managementHealthCheck; "Health checks for Network Load Balancer target groups",
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/target-group-health-checks.html). A request that
 * fails twice leaves `null` (no -f: the alarms check answers 503 with its JSON body
 * when
 * an alarm is raised, and that body is the sample). The sampler stops when the stop file appears
 * (stopBrokerSamplerLines)
 * or after `maxSeconds`, so that it never outlives a script that was killed. It runs with `set +e`: a failed request
 * must
 * not end it, and nothing it does fails the script.
 */
export function startBrokerSamplerLines(maxSeconds: number): string[] {
  if (!(Number.isInteger(maxSeconds) && maxSeconds > 0))
    throw new Error(`the sampler's maxSeconds must be a positive integer, got ${maxSeconds}`);
  const request = (name: keyof typeof BROKER_SAMPLE_PATHS) =>
    `    body=$(sample_get '${BROKER_SAMPLE_PATHS[name]}'); ` +
    `[ -n "$body" ] || body=$(sample_get '${BROKER_SAMPLE_PATHS[name]}'); line="$line,\\"${name}\\":\${body:-null}"`;
  return [
    'sample_get() {',
    `  printf 'user = "%s:%s"\\n' "$BENCH_USER" "$BENCH_PASS" | ` +
      `curl -sS --max-time ${REQUEST_TIMEOUT_SECONDS} -K - "$MANAGEMENT_URL$1" 2> /dev/null | tr -d '\\r\\n'`,
    '}',
    'sample_broker() {',
    '  set +e',
    `  local stop_at=$(( $(date +%s) + ${maxSeconds} )) next_ms=$(date +%s%3N) now_ms t body line`,
    `  while [ ! -e sampler.stop ] && [ "$(date +%s)" -lt "$stop_at" ]; do`,
    // Milliseconds since the epoch, written as seconds with three decimals.
    '    t=$(date +%s%3N); line="{\\"t\\":${t:0:-3}.${t: -3}"',
    request('nodes'),
    request('alarms'),
    request('queues'),
    `    printf '%s}\\n' "$line" >> ${BROKER_SAMPLES_FILE}`,
    // The next whole second after the previous one (a slow round skips ahead rather than sampling twice at once).
    '    next_ms=$(( next_ms + 1000 )); now_ms=$(date +%s%3N)',
    '    [ "$next_ms" -gt "$now_ms" ] || next_ms=$(( now_ms + 1000 - (now_ms - next_ms) % 1000 ))',
    '    sleep "$(( (next_ms - now_ms) / 1000 )).$(printf \'%03d\' $(( (next_ms - now_ms) % 1000 )))"',
    '  done',
    '}',
    `rm -f sampler.stop; touch ${BROKER_SAMPLES_FILE}`,
    'sample_broker & SAMPLER_PID=$!',
  ];
}

/** Shell lines that stop the sampler started by startBrokerSamplerLines and wait until its last line is written. */
export function stopBrokerSamplerLines(): string[] {
  return ['touch sampler.stop', 'wait "$SAMPLER_PID" || true'];
}
