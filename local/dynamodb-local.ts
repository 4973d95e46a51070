import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { dynamoDbLocalClassArgs } from './dynamodb-local-cds';
import { DYNAMODB_LOCAL_ARTIFACT, ensureArtifact } from './maven-artifacts';
import { canConnect, freePorts, waitFor } from './ports';
import { ManagedProcess, ProcessRegistry } from './processes';

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly process: ManagedProcess;
}

/**
 * Starts DynamoDB Local (Maven Central com.amazonaws:DynamoDBLocal) on a free port, persisting its
 * data in `dataPath` (or in memory when omitted), and waits until it answers.
 */
export async function startDynamoDbLocal(options: {
  readonly cacheDir: string;
  readonly processes: ProcessRegistry;
  readonly dataPath?: string;
  readonly logPath: string;
  /**
   * The JVM's class path arguments, for the class archive's training run (local/dynamodb-local-cds.ts).
   * @default - the archive's class path and archive once prepared, else every jar of the artifact
   */
  readonly classArgs?: readonly string[];
}): Promise<DynamoDbLocal> {
  const libDir = await ensureArtifact(options.cacheDir, DYNAMODB_LOCAL_ARTIFACT);
  const [port] = (await freePorts(1)) as [number];
  const storage = options.dataPath ? ['-dbPath', options.dataPath] : ['-inMemory'];
  if (options.dataPath) mkdirSync(options.dataPath, { recursive: true });
  const process = options.processes.start(
    'dynamodb-local',
    'java',
    [
      `-Djava.library.path=${libDir}`,
      '-Xmx512m',
      // It boots while the RabbitMQ nodes do, on the same cores, and serves a few hundred writes per
      // run: the C1 compiler only and the serial collector halve the CPU it spends until it answers
      // (measured here: 4.0 -> 2.0 CPU seconds). The start-up settings AWS documents for Java Lambda
      // functions: https://docs.aws.amazon.com/lambda/latest/dg/java-customization.html
      '-XX:+TieredCompilation',
      '-XX:TieredStopAtLevel=1',
      '-XX:+UseSerialGC',
      ...(options.classArgs ?? dynamoDbLocalClassArgs(libDir)),
      'com.amazonaws.services.dynamodbv2.local.main.ServerRunner',
      ...storage,
      '-sharedDb',
      '-port',
      String(port),
    ],
    // DynamoDB Local writes a metadata file into its working directory.
    { logPath: options.logPath, cwd: options.dataPath ?? dirname(options.logPath) },
  );
  await waitFor(
    async () => {
      if (process.hasExited) throw new Error(`DynamoDB Local exited at start; see ${options.logPath}`);
      return (await canConnect(port)) ? true : undefined;
    },
    60_000,
    () => `DynamoDB Local did not listen on port ${port} within 60 s; see ${options.logPath}`,
    200,
  );
  return { endpoint: `http://127.0.0.1:${port}`, process };
}
