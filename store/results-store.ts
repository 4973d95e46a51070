import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceNotFoundException,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  TABLE_KEYS,
  baselineKey,
  metricsFromItems,
  metricsKeyPrefix,
  repetitionItems,
  runItem,
  runKey,
  StoredRepetition,
  withoutKeys,
} from '../core/results/result-items';
import type { RepetitionMetrics } from '../core/metrics/host-metrics';
import type { PerSecondSample, RepetitionRecord, RunRecord, RunStatus } from '../core/results/result-model';

export const DEFAULT_TABLE_NAME = 'rmqbench-results';

/** The store could not be reached or refused a call; the message names the endpoint and the operation. */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

export interface StoredRun {
  readonly run: RunRecord;
  readonly repetitions: readonly StoredRepetition[];
}

/** Results in DynamoDB through the AWS SDK v3 document client (DynamoDB Local or the cloud table). */
export class ResultsStore {
  readonly documents: DynamoDBDocumentClient;

  constructor(
    readonly client: DynamoDBClient,
    readonly tableName: string = DEFAULT_TABLE_NAME,
    private readonly describeEndpoint = 'DynamoDB',
  ) {
    this.documents = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  }

  /** A store on DynamoDB Local (any credentials are accepted there). */
  static forEndpoint(endpoint: string, tableName = DEFAULT_TABLE_NAME): ResultsStore {
    const client = new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 2,
      requestHandler: { requestTimeout: 10_000, connectionTimeout: 3_000 },
    });
    return new ResultsStore(client, tableName, `DynamoDB at ${endpoint}`);
  }

  /** Creates the table when it does not exist (DynamoDB Local; in the cloud the construct creates it). */
  async ensureTable(): Promise<void> {
    try {
      await this.call('describe the table', () =>
        this.client.send(new DescribeTableCommand({ TableName: this.tableName })),
      );
      return;
    } catch (error) {
      if (!(error instanceof StoreError && error.cause instanceof ResourceNotFoundException)) throw error;
    }
    await this.call('create the table', () =>
      this.client.send(
        new CreateTableCommand({
          TableName: this.tableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [
            { AttributeName: TABLE_KEYS.partitionKey, AttributeType: 'S' },
            { AttributeName: TABLE_KEYS.sortKey, AttributeType: 'S' },
            { AttributeName: TABLE_KEYS.gsi1PartitionKey, AttributeType: 'S' },
            { AttributeName: TABLE_KEYS.gsi1SortKey, AttributeType: 'S' },
          ],
          KeySchema: [
            { AttributeName: TABLE_KEYS.partitionKey, KeyType: 'HASH' },
            { AttributeName: TABLE_KEYS.sortKey, KeyType: 'RANGE' },
          ],
          GlobalSecondaryIndexes: [
            {
              IndexName: TABLE_KEYS.gsi1Name,
              KeySchema: [
                { AttributeName: TABLE_KEYS.gsi1PartitionKey, KeyType: 'HASH' },
                { AttributeName: TABLE_KEYS.gsi1SortKey, KeyType: 'RANGE' },
              ],
              Projection: { ProjectionType: 'KEYS_ONLY' },
            },
          ],
        }),
      ),
    );
    await waitUntilTableExists({ client: this.client, maxWaitTime: 60 }, { TableName: this.tableName });
  }

  async putRun(run: RunRecord): Promise<void> {
    await this.call(`store run ${run.runId}`, () =>
      this.documents.send(new PutCommand({ TableName: this.tableName, Item: runItem(run) })),
    );
  }

  async finishRun(runId: string, status: RunStatus, finishedAt: string, error?: string): Promise<void> {
    await this.call(`finish run ${runId}`, () =>
      this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(runId),
          ConditionExpression: 'attribute_exists(PK)',
          UpdateExpression:
            error === undefined ? 'SET #s = :s, finishedAt = :f REMOVE #e' : 'SET #s = :s, finishedAt = :f, #e = :e',
          ExpressionAttributeNames: { '#s': 'status', '#e': 'error' },
          ExpressionAttributeValues: {
            ':s': status,
            ':f': finishedAt,
            ...(error === undefined ? {} : { ':e': error }),
          },
        }),
      ),
    );
  }

  /** Writes a repetition and its samples; deterministic keys make a second write of the same result a no-op. */
  async putRepetition(record: RepetitionRecord): Promise<void> {
    const items = repetitionItems(record);
    for (let start = 0; start < items.length; start += 25) {
      let requests = items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } }));
      for (let attempt = 0; requests.length > 0; attempt++) {
        if (attempt > 5)
          throw new StoreError(
            `${this.describeEndpoint}: could not write ${requests.length} item(s) of ` +
              `${record.scenarioId} #${record.repetition} after retries`,
          );
        const response = await this.call(`store ${record.scenarioId} repetition ${record.repetition}`, () =>
          this.documents.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: requests } })),
        );
        requests = (response.UnprocessedItems?.[this.tableName] ?? []) as typeof requests;
        if (requests.length > 0) await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
      }
    }
  }

  async getRun(runId: string): Promise<StoredRun | undefined> {
    const items = await this.queryAll(`read run ${runId}`, {
      KeyConditionExpression: 'PK = :pk',
      FilterExpression: '#t <> :samples AND #t <> :metrics',
      ExpressionAttributeNames: { '#t': 'type' },
      ExpressionAttributeValues: { ':pk': `RUN#${runId}`, ':samples': 'samples', ':metrics': 'metrics' },
    });
    const runItemFound = items.find((item) => item.type === 'run');
    if (!runItemFound) return undefined;
    return {
      run: withoutKeys<RunRecord>(runItemFound),
      repetitions: items
        .filter((item) => item.type === 'repetition')
        .map((item) => withoutKeys<StoredRepetition>(item)),
    };
  }

  async getSamples(runId: string, scenarioId: string, repetition: number): Promise<PerSecondSample[]> {
    const items = await this.queryAll(`read samples of ${scenarioId}`, {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: {
        ':pk': `RUN#${runId}`,
        ':prefix': `SAMPLES#${scenarioId}#${String(repetition).padStart(3, '0')}#`,
      },
    });
    return items.flatMap((item) => item.samples as PerSecondSample[]);
  }

  /** A repetition's broker and host metrics; undefined when none were stored (older runs, targets without them). */
  async getMetrics(runId: string, scenarioId: string, repetition: number): Promise<RepetitionMetrics | undefined> {
    const items = await this.queryAll(`read metrics of ${scenarioId}`, {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': `RUN#${runId}`, ':prefix': metricsKeyPrefix(scenarioId, repetition) },
    });
    return metricsFromItems(items);
  }

  /** Runs, newest first. */
  async listRuns(limit = 50): Promise<RunRecord[]> {
    const keys = await this.queryAll(
      'list runs',
      {
        IndexName: TABLE_KEYS.gsi1Name,
        KeyConditionExpression: 'GSI1PK = :runs',
        ExpressionAttributeValues: { ':runs': 'RUNS' },
        ScanIndexForward: false,
        Limit: limit,
      },
      limit,
    );
    const runs: RunRecord[] = [];
    for (const key of keys) {
      const response = await this.call('read a run', () =>
        this.documents.send(new GetCommand({ TableName: this.tableName, Key: { PK: key.PK, SK: key.SK } })),
      );
      if (response.Item) runs.push(withoutKeys<RunRecord>(response.Item));
    }
    return runs;
  }

  async setBaseline(planName: string, runId: string): Promise<void> {
    await this.call(`mark baseline of ${planName}`, () =>
      this.documents.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...baselineKey(planName), type: 'baseline', planName, runId },
        }),
      ),
    );
  }

  async getBaseline(planName: string): Promise<string | undefined> {
    const response = await this.call(`read baseline of ${planName}`, () =>
      this.documents.send(new GetCommand({ TableName: this.tableName, Key: baselineKey(planName) })),
    );
    return response.Item?.runId as string | undefined;
  }

  private async queryAll(
    operation: string,
    input: Omit<ConstructorParameters<typeof QueryCommand>[0], 'TableName'>,
    max = Number.POSITIVE_INFINITY,
  ): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const response = await this.call(operation, () =>
        this.documents.send(new QueryCommand({ ...input, TableName: this.tableName, ExclusiveStartKey: startKey })),
      );
      items.push(...((response.Items ?? []) as Record<string, unknown>[]));
      startKey = response.LastEvaluatedKey;
    } while (startKey && items.length < max);
    return items;
  }

  private async call<T>(operation: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new StoreError(`${this.describeEndpoint}: could not ${operation} in table ${this.tableName} (${reason})`, {
        cause: error,
      });
    }
  }
}
