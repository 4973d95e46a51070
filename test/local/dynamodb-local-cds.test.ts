import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DYNAMODB_LOCAL_CDS_FOLDER,
  dynamoDbLocalClassArgs,
  hasDynamoDbLocalArchive,
} from '../../local/dynamodb-local-cds';
import { tempDir } from './helpers';

describe("DynamoDB Local's class path, with and without its class archive", () => {
  const work = tempDir('ddb-cds-args');
  afterAll(() => work.cleanup());
  const libDir = join(work.path, 'DynamoDBLocal-2.6.1');
  const cds = join(libDir, DYNAMODB_LOCAL_CDS_FOLDER);
  mkdirSync(cds, { recursive: true });
  for (const name of ['sqlite4java-1.0.392.jar', 'DynamoDBLocal-2.6.1.jar', 'antlr4-runtime-4.10.1.jar', 'lib.so'])
    writeFileSync(join(libDir, name), '');

  test('before the archive is prepared: every jar of the folder, as before', () => {
    expect(dynamoDbLocalClassArgs(libDir)).toEqual(['-cp', join(libDir, '*')]);
    // The jar's copy alone (a preparation that stopped before its dump) does not count.
    writeFileSync(join(cds, 'DynamoDBLocal-2.6.1.jar'), '');
    expect(dynamoDbLocalClassArgs(libDir)).toEqual(['-cp', join(libDir, '*')]);
    expect(hasDynamoDbLocalArchive(libDir)).toBe(false);
  });

  test("once prepared: the archive, and the jar's copy first then the other jars by name, never the original", () => {
    writeFileSync(join(cds, 'DynamoDBLocal-2.6.1.jar'), '');
    writeFileSync(join(cds, 'dynamodb-local.jsa'), '');
    expect(hasDynamoDbLocalArchive(libDir)).toBe(true);
    expect(dynamoDbLocalClassArgs(libDir)).toEqual([
      '-Xshare:auto',
      `-XX:SharedArchiveFile=${join(cds, 'dynamodb-local.jsa')}`,
      '-cp',
      [
        join(cds, 'DynamoDBLocal-2.6.1.jar'),
        join(libDir, 'antlr4-runtime-4.10.1.jar'),
        join(libDir, 'sqlite4java-1.0.392.jar'),
      ].join(':'),
    ]);
  });
});
