/**
 * What the Azure twin's integration tests share: `rmqbench run <plan> --target azure` against an Azure twin started for
 * the test (stopped after each test), whose synthesized controller template a test may change first, and the raw
 * stdout of each repetition in the twin's S3 for a failure message. Call inside a describe block: it registers the
 * hooks.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildControllerApp } from '../../../examples/controller/controller-app';
import { runPlanOnTwin, twinLogSink } from '../twin-test-setup';
import { startAzureTwin, type AzureTwin } from './azure-twin';

export type ControllerTemplate = {
  Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
};

export interface AzureTwinRun {
  readonly twin: AzureTwin;
  readonly env: Record<string, string>;
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The twin's own [twin] and [azure twin] lines. */
  readonly log: string;
}

export function azureTwinTestSetup(): {
  /** `rmqbench run <planYaml> --target azure` on a twin whose controller template `change` rewrote, if given. */
  runOnTwin(planYaml: string, change?: (template: ControllerTemplate) => void): Promise<AzureTwinRun>;
  /** The raw stdout of each repetition in the twin's S3 (what a failed repetition printed). */
  rawOutputs(twin: AzureTwin): Promise<string>;
} {
  const scratch = mkdtempSync(join(tmpdir(), 'rmqbench-azure-twin-test-'));
  const twins: AzureTwin[] = [];
  afterEach(async () => {
    for (const twin of twins.splice(0)) await twin.stop();
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  const runOnTwin = async (planYaml: string, change?: (template: ControllerTemplate) => void) => {
    const { lines: log, log: sink } = twinLogSink();
    const planFile = join(mkdtempSync(join(scratch, 'plan-')), 'plan.yaml');
    writeFileSync(planFile, planYaml);
    const twin = await startAzureTwin({
      synthesize: (context) => {
        const outdir = mkdtempSync(join(scratch, 'cdk.out-'));
        buildControllerApp({ outdir, context }).synth();
        return outdir;
      },
      ...(change
        ? {
            changeAssembly: (cdkOut: string) => {
              const file = join(cdkOut, 'RmqbenchController.template.json');
              const template = JSON.parse(readFileSync(file, 'utf8')) as ControllerTemplate;
              change(template);
              writeFileSync(file, JSON.stringify(template));
            },
          }
        : {}),
      log: sink,
    });
    twins.push(twin);
    return { twin, ...(await runPlanOnTwin(scratch, twin.env, planFile, 'azure', 2)), log: log.join('\n') };
  };

  const rawOutputs = async (twin: AzureTwin) => {
    const s3 = new S3Client({ ...twin.aws.clientConfig, forcePathStyle: true });
    try {
      const bucket = [...twin.aws.resources.values()].find(
        (resource) => resource.ResourceType === 'AWS::S3::Bucket' && /RawOutput/.test(resource.LogicalResourceId!),
      )!.PhysicalResourceId!;
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
      const texts: string[] = [];
      for (const object of listed.Contents ?? []) {
        if (!/(stdout\.txt|\.log)$/.test(object.Key!)) continue;
        const body = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: object.Key! }));
        texts.push(`${object.Key}:\n${(await body.Body!.transformToString()).slice(-1500)}`);
      }
      return texts.join('\n');
    } finally {
      s3.destroy();
    }
  };
  return { runOnTwin, rawOutputs };
}
