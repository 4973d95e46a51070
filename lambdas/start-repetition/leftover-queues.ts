import { BENCHMARK_QUEUE_PATTERN } from '../../core/broker/broker-config';

/**
 * Lists the benchmark queues' names, URL-encoded, one per line, from the management API's JSON on stdin. python3 is on
 * both load generators: Amazon Linux 2023's (the AWS script already reads the admin secret with it) and Ubuntu 24.04's,
 * whose cloud-init, which boots the VM, is a Python 3 program
 * (https://discourse.ubuntu.com/t/announcement-cloud-init-perfomance-optimization-single-process/47505).
 */
const BENCHMARK_QUEUES_PY =
  `import json,re,sys,urllib.parse; ` +
  `[print(urllib.parse.quote(q["name"], safe="")) for q in json.load(sys.stdin) ` +
  `if re.match(r"${BENCHMARK_QUEUE_PATTERN}", q["name"])]`;

/**
 * Shell lines, for the run script of generator 0 before the shared start and before the verifier, that delete every
 * benchmark queue (BENCHMARK_QUEUE_PATTERN: PerfTest's and the lost-message verifier's) an earlier repetition or
 * scenario left on the cluster, through the management API with the admin credentials (`admin_api` of
 * benchmarkUserLines). The local target does the same before each repetition
 * (LocalRabbitCluster.deleteBenchmarkQueues).
 *
 * Without it a cluster's repetitions ran on one another's queues: quorum queues and streams are durable and not
 * auto-delete (core/perftest/perftest-args.ts), so a backlog from the last repetition reached the next one's consumers
 * first (stale timestamps, inflated latency; in a fixed-work run they counted towards `--cmessages`), the verifier's
 * sequence numbers, which start at 0 each repetition, met the last one's, and a later scenario with another
 * `maxLength` or `overflow` on the same cluster was refused by PerfTest's declare (PRECONDITION_FAILED: RabbitMQ
 * checks those arguments for equivalence on quorum queues).
 *
 * A queue that cannot be deleted (already gone, or the API refused) is said on stderr and the repetition goes on: a
 * declare that then conflicts fails PerfTest with the broker's own reason.
 */
export function deleteLeftoverQueuesLines(): string[] {
  return [
    `admin_api GET 'queues/%2F?columns=name' > queues.json`,
    `python3 -c '${BENCHMARK_QUEUES_PY}' < queues.json > leftover-queues.txt`,
    'while IFS= read -r queue; do',
    '  admin_api DELETE "queues/%2F/$queue" > /dev/null || ' +
      'echo "rmqbench: could not delete the leftover queue $queue" >&2',
    'done < leftover-queues.txt',
    'rm -f queues.json leftover-queues.txt',
  ];
}
