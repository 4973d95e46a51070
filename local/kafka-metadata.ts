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
export function fetchRegisteredBrokers(
  port: number,
  host = '127.0.0.1',
  timeoutMs = 2000,
): Promise<KafkaBrokerAddress[]> {
  const clientId = Buffer.from('rmqbench');
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4 + 1);
  let at = 0;
  at = body.writeInt16BE(3, at); // api_key: Metadata
  at = body.writeInt16BE(4, at); // api_version
  at = body.writeInt32BE(1, at); // correlation_id
  at = body.writeInt16BE(clientId.length, at);
  at += clientId.copy(body, at);
  at = body.writeInt32BE(-1, at); // topics: null = every topic
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
        resolve(parseBrokers(received.subarray(4, 4 + received.readInt32BE(0))));
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    socket.connect(port, host, () => socket.write(frame));
  });
}

/** Reads the broker list of a Metadata v4 response (after the size prefix). */
export function parseBrokers(response: Buffer): KafkaBrokerAddress[] {
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
  return brokers;
}
