import { Socket } from 'node:net';

/** A broker as a Metadata response lists it. */
export interface KafkaBrokerAddress {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

/**
 * The brokers a Kafka broker knows to be registered, from one Metadata request (API key 3) over the wire:
 * cheaper than starting a JVM for each poll while a cluster boots. Version 4 is the lowest Kafka 4.x still
 * accepts (KIP-896 removed v0-v3) and the last before the flexible encoding; its request is topics (null: all)
 * and allow_auto_topic_creation, its response throttle_time_ms, brokers [node_id, host, port, rack], cluster_id,
 * controller_id, topics. Schemas: clients/src/main/resources/common/message/MetadataRequest.json and
 * MetadataResponse.json in apache/kafka; framing (int32 size, request header v1) in the protocol guide,
 * https://kafka.apache.org/protocol#protocol_messages.
 */
export async function fetchRegisteredBrokers(
  port: number,
  host = '127.0.0.1',
  timeoutMs = 2000,
): Promise<KafkaBrokerAddress[]> {
  return parseBrokers(await metadataResponse(port, null, host, timeoutMs)).brokers;
}

/**
 * The node id leading partition 0 of `topic`, as the broker on `port` knows it from its metadata (Metadata v4's topics:
 * error_code, name, is_internal, partitions [error_code, partition_index, leader_id, replica_nodes, isr_nodes]);
 * undefined while it has none (an election under way) or does not know the topic.
 */
export async function fetchPartitionLeader(port: number, topic: string, timeoutMs = 2000): Promise<number | undefined> {
  const response = await metadataResponse(port, [topic], '127.0.0.1', timeoutMs);
  const { topicsAt } = parseBrokers(response);
  let at = topicsAt;
  const topics = response.readInt32BE(at);
  at += 4;
  for (let index = 0; index < topics; index++) {
    at += 2; // error_code
    const nameLength = response.readInt16BE(at);
    const name = response.toString('utf8', at + 2, at + 2 + nameLength);
    at += 2 + nameLength + 1; // name, is_internal
    const partitions = response.readInt32BE(at);
    at += 4;
    for (let p = 0; p < partitions; p++) {
      const partitionIndex = response.readInt32BE(at + 2);
      const leader = response.readInt32BE(at + 6);
      at += 10;
      for (let list = 0; list < 2; list++) at += 4 + 4 * Math.max(0, response.readInt32BE(at)); // replicas, isr
      if (name === topic && partitionIndex === 0) return leader >= 0 ? leader : undefined;
    }
  }
  return undefined;
}

/** One Metadata v4 request for `topics` (null: every topic) and its response body (after the size prefix). */
function metadataResponse(
  port: number,
  topics: readonly string[] | null,
  host: string,
  timeoutMs: number,
): Promise<Buffer> {
  const clientId = Buffer.from('rmqbench');
  const names = (topics ?? []).map((topic) => Buffer.from(topic));
  const namesLength = names.reduce((sum, name) => sum + 2 + name.length, 0);
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4 + namesLength + 1);
  let at = 0;
  at = body.writeInt16BE(3, at); // api_key: Metadata
  at = body.writeInt16BE(4, at); // api_version
  at = body.writeInt32BE(1, at); // correlation_id
  at = body.writeInt16BE(clientId.length, at);
  at += clientId.copy(body, at);
  at = body.writeInt32BE(topics === null ? -1 : names.length, at); // topics: null = every topic
  for (const name of names) {
    at = body.writeInt16BE(name.length, at);
    at += name.copy(body, at);
  }
  body.writeInt8(0, at); // allow_auto_topic_creation
  const frame = Buffer.alloc(4 + body.length);
  frame.writeInt32BE(body.length, 0);
  body.copy(frame, 4);

  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let received = Buffer.alloc(0);
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(timeoutMs, () =>
      fail(new Error(`no Metadata answer from ${host}:${port} within ${timeoutMs} ms`)),
    );
    socket.once('error', fail);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 4 || received.length < 4 + received.readInt32BE(0)) return;
      socket.destroy();
      try {
        resolve(received.subarray(4, 4 + received.readInt32BE(0)));
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    socket.connect(port, host, () => socket.write(frame));
  });
}

/**
 * Reads the broker list of a Metadata v4 response (after the size prefix), and where its topics start (after
 * cluster_id and controller_id).
 */
export function parseBrokers(response: Buffer): { brokers: KafkaBrokerAddress[]; topicsAt: number } {
  let at = 4 + 4; // correlation_id, throttle_time_ms
  const count = response.readInt32BE(at);
  at += 4;
  const brokers: KafkaBrokerAddress[] = [];
  for (let index = 0; index < count; index++) {
    const nodeId = response.readInt32BE(at);
    const hostLength = response.readInt16BE(at + 4);
    const host = response.toString('utf8', at + 6, at + 6 + hostLength);
    at += 6 + hostLength;
    const port = response.readInt32BE(at);
    const rackLength = response.readInt16BE(at + 4);
    at += 6 + Math.max(rackLength, 0);
    brokers.push({ nodeId, host, port });
  }
  const clusterIdLength = response.readInt16BE(at);
  at += 2 + Math.max(clusterIdLength, 0) + 4; // cluster_id, controller_id
  return { brokers, topicsAt: at };
}
