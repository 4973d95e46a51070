import { parseVerifierCounts } from '../../core/failover/verifier-output';
import { natsVerifierArgs } from '../../core/nats/nats-verifier-output';

const parseNatsVerifierCounts = (output: string) => parseVerifierCounts(output, 'NATS');

const counts = {
  type: 'counts',
  published: 4000,
  confirmed: 3990,
  consumed: 3985,
  lostMessages: 5,
  duplicatedMessages: 2,
  reconnects: 1,
  receivedPerSecond: [200, 199, 0, 150, 201],
  faultAtSeconds: 2.004,
  unconfirmedAtFault: 7,
  healAtSeconds: 3.5,
};

describe("a process verifier's output (NATS's here; Kafka's has the same lines)", () => {
  test('the counts line becomes the counts the RabbitMQ verifier returns, fault and heal included', () => {
    const output = `{"type":"ready","stream":"s"}\n${JSON.stringify(counts)}\n`;
    const { type: _type, ...expected } = counts;
    expect(parseNatsVerifierCounts(output)).toEqual(expected);
  });

  test('without a fault mark the counts have no fault fields', () => {
    const { faultAtSeconds: _f, unconfirmedAtFault: _u, healAtSeconds: _h, ...unmarked } = counts;
    const parsed = parseNatsVerifierCounts(JSON.stringify(unmarked));
    expect(parsed).not.toHaveProperty('faultAtSeconds');
    expect(parsed).not.toHaveProperty('healAtSeconds');
    expect(parsed.lostMessages).toBe(5);
  });

  test('output cut short, a counts line cut mid-way, a broken field or an error line: an error naming it', () => {
    expect(() => parseNatsVerifierCounts('{"type":"ready","stream":"s"}\n')).toThrow(
      "the NATS verifier's output holds no counts line (it was ready, then stopped before counts; cut short?)",
    );
    expect(() => parseNatsVerifierCounts('')).toThrow(/holds no counts line \(no counts/);
    const cut = JSON.stringify(counts).slice(0, 60);
    expect(() => parseNatsVerifierCounts(`{"type":"ready"}\n${cut}`)).toThrow(/no counts line/);
    expect(() => parseNatsVerifierCounts(JSON.stringify({ ...counts, confirmed: 'many' }))).toThrow(
      "the NATS verifier's counts line has no number confirmed",
    );
    expect(() => parseNatsVerifierCounts(JSON.stringify({ ...counts, receivedPerSecond: [1, 'x'] }))).toThrow(
      /no receivedPerSecond list of numbers/,
    );
    expect(() =>
      parseNatsVerifierCounts('{"type":"error","message":"create verifier stream s: insufficient resources"}'),
    ).toThrow('the NATS verifier failed: create verifier stream s: insufficient resources');
  });

  test("its arguments carry the workload's stream settings, and limits only when set", () => {
    const args = natsVerifierArgs({
      servers: ['nats://127.0.0.1:1', 'nats://127.0.0.1:2'],
      stream: 'rmqbench-verifier-abc',
      subject: 'rmqbench.verifier.abc',
      settings: { replicas: 3, storage: 'memory', retention: 'workqueue', maxMsgs: 1000 },
    });
    expect(args.slice(0, 9)).toEqual([
      '-verify',
      '-servers',
      'nats://127.0.0.1:1,nats://127.0.0.1:2',
      '-stream',
      'rmqbench-verifier-abc',
      '-subject',
      'rmqbench.verifier.abc',
      '-verify-rate',
      '200',
    ]);
    const flag = (name: string) => args[args.indexOf(name) + 1];
    expect([flag('-storage'), flag('-replicas'), flag('-retention'), flag('-max-msgs')]).toEqual([
      'memory',
      '3',
      'workqueue',
      '1000',
    ]);
    expect(args).not.toContain('-max-bytes');
  });
});
