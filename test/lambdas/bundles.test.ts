import { natsLoadSourceFolder } from '../../lambdas/shared/nats-load-generator';
import { kafkaVerifierSourceFile } from '../../lambdas/shared/broker-verifier-lines';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Runs the real build step (scripts/bundle-lambdas.mjs) into a folder outside the repository, where no node_modules
// can be found: what the bundles need must be inside them, as in a Lambda deployment package.
const ROOT = join(__dirname, '..', '..');
const out = mkdtempSync(join(tmpdir(), 'rmqbench-bundles-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

interface BundleReport {
  name: string;
  coldStartBytes: number;
  totalBytes: number;
  coldStartPackages: string[];
  packages: string[];
}
let report: BundleReport[] = [];
let buildOutput = '';
beforeAll(() => {
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts/bundle-lambdas.mjs'), '--out', out], {
    encoding: 'utf8',
  });
  if (build.status !== 0) throw new Error(`bundling failed: ${build.stderr}`);
  buildOutput = build.stdout;
  report = JSON.parse(readFileSync(join(out, 'bundle-report.json'), 'utf8')) as BundleReport[];
}, 120_000);
const bundle = (name: string) => report.find((entry) => entry.name === name)!;

/** Functions that never call Azure, whatever the target. */
const NEVER_AZURE = ['validate-plan', 'run-record'];
const KB = 1024;

describe('Lambda bundles (scripts/bundle-lambdas.mjs)', () => {
  test("every handler is bundled, and the build prints each one's size", () => {
    expect(report.map((entry) => entry.name)).toEqual([
      'check-cluster',
      'check-repetition',
      'failure-handler',
      'fault',
      'ingest-repetition',
      'launch-cluster',
      'run-record',
      'smoke-test',
      'start-repetition',
      'sweeper',
      'teardown-cluster',
      'validate-plan',
    ]);
    for (const entry of report)
      expect(buildOutput).toMatch(
        new RegExp(
          `${entry.name} +cold start +${Math.round(entry.coldStartBytes / KB)} KB +all ` +
            `chunks +${Math.round(entry.totalBytes / KB)} KB`,
        ),
      );
  });

  test('what a cold start loads is at most 1 MB for every function, and holds no Azure SDK', () => {
    for (const entry of report) {
      expect({ name: entry.name, withinOneMegabyte: entry.coldStartBytes <= 1024 * KB }).toEqual({
        name: entry.name,
        withinOneMegabyte: true,
      });
      expect({ name: entry.name, azure: entry.coldStartPackages.filter((name) => name.startsWith('@azure')) }).toEqual({
        name: entry.name,
        azure: [],
      });
    }
  });

  test('the Azure SDK is a chunk of the functions that dispatch to Azure only, and absent from the others', () => {
    for (const name of [
      'launch-cluster',
      'check-cluster',
      'smoke-test',
      'start-repetition',
      'check-repetition',
      'teardown-cluster',
      'failure-handler',
      'sweeper',
    ]) {
      expect(bundle(name).packages).toEqual(
        expect.arrayContaining(['@azure/arm-compute', '@azure/arm-resources', '@azure/identity']),
      );
    }
    // IngestRepetition reads an Azure repetition's host metrics from Azure Monitor with the ARM credential.
    expect(bundle('ingest-repetition').packages).toEqual(
      expect.arrayContaining(['@azure/arm-resources', '@azure/identity', '@azure/core-rest-pipeline']),
    );
    for (const name of NEVER_AZURE)
      expect({ name, azure: bundle(name).packages.filter((pkg) => pkg.startsWith('@azure')) }).toEqual({
        name,
        azure: [],
      });
  });

  test(
    'the AWS SDK is bundled, with @aws-sdk/lib-dynamodb ' + 'and @aws-sdk/s3-request-presigner where they are used',
    () => {
      for (const name of ['run-record', 'ingest-repetition', 'failure-handler'])
        expect(bundle(name).coldStartPackages).toContain('@aws-sdk/lib-dynamodb');
      expect(bundle('start-repetition').packages).toContain('@aws-sdk/s3-request-presigner');
      expect(bundle('check-cluster').coldStartPackages).toEqual(
        expect.arrayContaining(['@aws-sdk/client-cloudformation', '@aws-sdk/client-ssm']),
      );
      expect(bundle('validate-plan').packages.filter((pkg) => pkg.startsWith('@aws-sdk'))).toEqual([]);
    },
  );

  test('yaml (plan files only) is in no bundle, and zod only where a plan is validated', () => {
    for (const entry of report)
      expect({ name: entry.name, yaml: entry.packages.includes('yaml') }).toEqual({ name: entry.name, yaml: false });
    expect(report.filter((entry) => entry.packages.includes('zod')).map((entry) => entry.name)).toEqual([
      'check-repetition',
      'fault',
      'launch-cluster',
      'run-record',
      'start-repetition',
      'validate-plan',
    ]);
  });

  test('ValidatePlan and RunRecord (they never touch Azure) and the stack-deleting functions stay under 300 KB', () => {
    // RunRecord takes the validated plan from ValidatePlan's output; zod is a chunk it loads only for a run that failed
    // before RecordRunStart.
    expect(bundle('run-record').coldStartPackages).not.toContain('zod');
    for (const name of ['validate-plan', 'run-record', 'teardown-cluster', 'sweeper']) {
      expect({
        name,
        kilobytes: Math.round(bundle(name).coldStartBytes / KB),
        within: bundle(name).coldStartBytes <= 300 * KB,
      }).toEqual({ name, kilobytes: Math.round(bundle(name).coldStartBytes / KB), within: true });
    }
  });

  test(
    "each function's folder (its Lambda asset) holds only " +
      'the ES module bundle: no index.js that Lambda would load first',
    () => {
      // StartRepetition carries the Kafka verifier's source (kafka-verifier/). The functions that send NATS scripts
      // carry the load client's source beside the bundle (nats-load/), which
      // the scripts build on the load generator
      // (CheckClusterReady too: on Azure it asks a NATS cluster's readiness with the smoke test's script.)
      const withNatsSource = ['check-cluster', 'smoke-test', 'start-repetition'];
      for (const entry of report) {
        const files = readdirSync(join(out, entry.name)).sort();
        expect({
          name: entry.name,
          entry: files.includes('index.mjs'),
          others: files.filter((file) => file !== 'index.mjs' && file !== 'chunks'),
        }).toEqual({
          name: entry.name,
          entry: true,
          others: [
            ...(entry.name === 'start-repetition' ? ['kafka-verifier'] : []),
            ...(withNatsSource.includes(entry.name) ? ['nats-load'] : []),
          ],
        });
      }
      // StartRepetition's Kafka scripts carry the lost-message verifier's source, found from its chunks/ too.
      expect(kafkaVerifierSourceFile(join(out, 'start-repetition', 'chunks'))).toBe(
        join(out, 'start-repetition', 'kafka-verifier', 'KafkaLostMessageVerifier.java'),
      );
      for (const name of withNatsSource) {
        expect(readdirSync(join(out, name, 'nats-load')).sort()).toEqual(['go.mod', 'go.sum', 'main.go', 'verify.go']);
        // From the bundle's chunks/ folder, where esbuild may put the code that reads it, the source is found.
        expect(natsLoadSourceFolder(join(out, name, 'chunks'))).toBe(join(out, name, 'nats-load'));
      }
    },
  );

  test('each bundle loads as an ES module without node_modules, and an azure invocation loads the Azure chunk', () => {
    const run = spawnSync(
      process.execPath,
      [join(ROOT, 'test/fixtures/lambdas/load-bundles.mjs'), out, ...report.map((entry) => entry.name)],
      { encoding: 'utf8', cwd: out, timeout: 60_000 },
    );
    expect(run.stderr).toBe('');
    const results = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { name: string; handler: string; azure?: string });
    expect(results.map((result) => [result.name, result.handler])).toEqual(
      report.map((entry) => [entry.name, 'function']),
    );
    const missingAzure =
      'environment variable AZURE_CREDENTIALS_SECRET_ARN is not set (the ' +
      'BenchmarkController sets it when its azure prop is given)';
    expect(results.filter((result) => result.azure !== undefined)).toEqual(
      ['check-cluster', 'check-repetition', 'smoke-test', 'start-repetition', 'teardown-cluster'].map((name) => ({
        name,
        handler: 'function',
        azure: missingAzure,
      })),
    );
  });
});
