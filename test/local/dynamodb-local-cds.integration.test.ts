import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dynamoDbArchiveCheck } from '../../local/doctor';
import { startDynamoDbLocal } from '../../local/dynamodb-local';
import { DYNAMODB_LOCAL_CDS_FOLDER } from '../../local/dynamodb-local-cds';
import { DYNAMODB_LOCAL_ARTIFACT, ensureArtifact } from '../../local/maven-artifacts';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { ResultsStore } from '../../store/results-store';
import { tempDir } from './helpers';

/**
 * DynamoDB Local's class archive (local/dynamodb-local-cds.ts) prepared by doctor's check on a copy of the real
 * artifact (DynamoDBLocal 2.6.1 from the rmqbench cache, this machine's JDK): the training run, the dump, a start that
 * maps the archive and serves the store, and a damaged archive that the JVM ignores.
 */
jest.setTimeout(180_000);

describe("DynamoDB Local's class archive, on a copy of the real artifact", () => {
  const work = tempDir('ddb-cds');
  const cache = join(work.path, 'cache');
  const folderName = `${DYNAMODB_LOCAL_ARTIFACT.artifactId}-${DYNAMODB_LOCAL_ARTIFACT.version}`;
  const libDir = join(cache, 'maven', folderName);
  const archive = join(libDir, DYNAMODB_LOCAL_CDS_FOLDER, 'dynamodb-local.jsa');
  const processes = new ProcessRegistry();

  beforeAll(async () => {
    const source = await ensureArtifact(cacheDir(), DYNAMODB_LOCAL_ARTIFACT);
    mkdirSync(libDir, { recursive: true });
    for (const name of readdirSync(source).filter((entry) => entry !== DYNAMODB_LOCAL_CDS_FOLDER))
      copyFileSync(join(source, name), join(libDir, name));
  });
  afterAll(async () => {
    await processes.stopAll();
    work.cleanup();
  });

  /** DynamoDB Local from the copy, whether its JVM maps the archive, and a table written and read through it. */
  async function startAndUse(name: string) {
    const local = await startDynamoDbLocal({ cacheDir: cache, processes, logPath: join(work.path, `${name}.log`) });
    const mapped = readFileSync(`/proc/${local.process.pid}/maps`, 'utf8').includes(archive);
    const store = ResultsStore.forEndpoint(local.endpoint, `cds-${name}`);
    await store.ensureTable();
    await store.putRun({
      runId: name,
      planName: 'cds',
      plan: {},
      target: 'local',
      status: 'SUCCEEDED',
      startedAt: new Date().toISOString(),
      environment: {},
      scenarioIds: [],
    });
    const stored = (await store.getRun(name))?.run.runId;
    await local.process.stop();
    return { mapped, stored };
  }

  test(
    'not prepared: reported as missing without failing doctor, ' + 'and DynamoDB Local starts from the jars',
    async () => {
      const check = await dynamoDbArchiveCheck({ cacheDir: cache, fix: false });
      expect(check).toMatchObject({ ok: false, onlyFor: expect.any(String) });
      expect(check.detail).toMatch(/not prepared; run: rmqbench doctor --fix/);
      expect(await startAndUse('before')).toEqual({ mapped: false, stored: 'before' });
    },
  );

  test(
    '--fix prepares it (the jar copy has no manifest); ' + 'DynamoDB Local then maps it and serves the store',
    async () => {
      const check = await dynamoDbArchiveCheck({ cacheDir: cache, fix: true });
      expect(check).toEqual({ name: 'DynamoDB Local class archive', ok: true, detail: archive });
      const copy = join(libDir, DYNAMODB_LOCAL_CDS_FOLDER, `${folderName}.jar`);
      const entries = execFileSync('unzip', ['-Z1', copy], { encoding: 'utf8' }).split('\n');
      expect(entries).not.toContain('META-INF/MANIFEST.MF');
      expect(entries).toContain('com/amazonaws/services/dynamodbv2/local/main/ServerRunner.class');
      // Nothing but the copy and the archive is left: no class list, no partial file.
      expect(readdirSync(join(libDir, DYNAMODB_LOCAL_CDS_FOLDER)).sort()).toEqual(
        [`${folderName}.jar`, 'dynamodb-local.jsa'].sort(),
      );
      expect(await startAndUse('prepared')).toEqual({ mapped: true, stored: 'prepared' });
      expect((await dynamoDbArchiveCheck({ cacheDir: cache, fix: false })).detail).toBe('prepared');
    },
  );

  test(
    'a damaged archive is ignored by the JVM: ' + 'DynamoDB Local starts from the jars and serves the store',
    async () => {
      expect(existsSync(archive)).toBe(true);
      execFileSync('chmod', ['u+w', archive]);
      writeFileSync(archive, 'not an archive');
      expect(await startAndUse('damaged')).toEqual({ mapped: false, stored: 'damaged' });
    },
  );
});
