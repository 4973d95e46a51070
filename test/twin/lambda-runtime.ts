/**
 * Lambda for the twin: a function's deployed bundle (the zip its stack points to, read back from the twin's S3) run in
 * a process of its own per invocation, with the function's configuration as CloudFormation deployed it (handler,
 * environment, timeout) and the credentials of its execution role, as the Lambda runtime provides them: the AWS_*
 * variables of the Lambda developer guide's "Defined runtime environment variables"
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime).
 * Its SDK clients reach the twin through AWS_ENDPOINT_URL (the SDKs' standard endpoint setting,
 * https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';

export interface FunctionConfiguration {
  readonly functionName: string;
  readonly functionArn: string;
  readonly handler: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  readonly roleArn: string;
  readonly environment: Record<string, string>;
  /** Subnets the function is attached to (empty: outside the VPC). */
  readonly subnetIds: readonly string[];
  readonly securityGroupIds: readonly string[];
  /** Where its code is: the S3 object the stack names. */
  readonly code: { readonly bucket: string; readonly key: string };
}

export interface Invocation {
  /** The payload the function returned, or its error as Lambda reports it. */
  readonly result:
    | { readonly ok: true; readonly payload: unknown }
    | { readonly ok: false; readonly errorType: string; readonly errorMessage: string };
  readonly logs: string;
}

/** Runs in the child: loads the handler module and calls it once (the event from a file, the answer to a file). */
const BOOTSTRAP =
  `
const { readFileSync, writeFileSync } = require('node:fs');
const { pathToFileURL } = require('node:url');
const [codeDir, handler, eventFile, resultFile] = process.argv.slice(1);
const [moduleName, exportName] = handler.split('.');
const started = Date.now();
const deadline = started + Number(process.env.AWS_LAMBDA_FUNCTION_TIMEOUT) * 1000;
const context = { functionName: process.env.AWS_LAMBDA_FUNCTION_NAME, awsRequestId: process.env.TWIN_REQUEST_ID, ` +
  `getRemainingTimeInMillis: () => deadline - Date.now() };
(async () => {
  try {
    const module = await import(pathToFileURL(codeDir + '/' + moduleName + '.mjs').href);
    const payload = await module[exportName](JSON.parse(readFileSync(eventFile, 'utf8')), context);
    writeFileSync(resultFile, JSON.stringify({ ok: true, payload: payload === undefined ? null : payload }));
  } catch (error) {
    console.error(error);
    writeFileSync(resultFile, JSON.stringify({ ok: false, errorType: (error && error.name) || 'Error', ` +
  `errorMessage: String((error && error.message) || error) }));
  }
  process.exit(0);
})();
`;

export class LambdaRuntime {
  private readonly codeDirs = new Map<string, Promise<string>>();
  private invocations = 0;

  /**
   * @param workDir where bundles are unpacked and events written
   * @param fetchCode the zip of an S3 object (the twin's S3)
   * @param nodeBinary Node 22 (the package's own; Lambda's nodejs24.x runtime is newer)
   */
  constructor(
    private readonly workDir: string,
    private readonly fetchCode: (bucket: string, key: string) => Promise<Buffer>,
    private readonly nodeBinary: string,
  ) {}

  /**
   * The function's unpacked bundle, unpacked once per code object: concurrent invocations (the workflow launches a
   * plan's clusters at once) share the one unpacking, which none may see half done.
   */
  private codeDir(config: FunctionConfiguration): Promise<string> {
    let unpacked = this.codeDirs.get(config.code.key);
    if (!unpacked) {
      unpacked = this.unpack(config);
      this.codeDirs.set(config.code.key, unpacked);
    }
    return unpacked;
  }

  private async unpack(config: FunctionConfiguration): Promise<string> {
    const name = config.code.key.replace(/[^A-Za-z0-9.-]/g, '_');
    const dir = join(this.workDir, 'code', name);
    mkdirSync(dir, { recursive: true });
    const zip = join(dir, '..', `${name}.zip`);
    writeFileSync(zip, await this.fetchCode(config.code.bucket, config.code.key));
    execFileSync('unzip', ['-q', '-o', zip, '-d', dir]);
    return dir;
  }

  /**
   * `prefix`: a command that runs the function's process elsewhere (e.g. in a VPC-attached function's network
   * namespace).
   */
  async invoke(
    config: FunctionConfiguration,
    event: unknown,
    credentials: { accessKeyId: string; secretAccessKey: string; sessionToken: string },
    endpoint: string,
    prefix: readonly string[] = [],
    extraEnvironment: Readonly<Record<string, string>> = {},
  ): Promise<Invocation> {
    const dir = await this.codeDir(config);
    const id = `${++this.invocations}`;
    const scratch = mkdtempSync(join(this.workDir, `invoke-${id}-`));
    const eventFile = join(scratch, 'event.json');
    const resultFile = join(scratch, 'result.json');
    writeFileSync(eventFile, JSON.stringify(event));
    const env: Record<string, string> = {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      ...config.environment,
      AWS_REGION: 'us-east-1',
      AWS_DEFAULT_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_SESSION_TOKEN: credentials.sessionToken,
      AWS_LAMBDA_FUNCTION_NAME: config.functionName,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(config.memoryMb),
      AWS_LAMBDA_FUNCTION_TIMEOUT: String(config.timeoutSeconds),
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
      AWS_ENDPOINT_URL: endpoint,
      TWIN_REQUEST_ID: id,
      TZ: ':UTC',
      // The shared start of several load generators 8 s ahead instead of 20 (lambdas/start-repetition/generators.ts):
      // the twin's commands reach its instances at once. TWIN_REAL_WAITS=1 keeps the function's own.
      ...(process.env['TWIN_REAL_WAITS'] === '1' ? {} : { RMQBENCH_SHARED_START_DELAY_SECONDS: '8' }),
      ...extraEnvironment,
    };
    const command = [...prefix, this.nodeBinary, '-e', BOOTSTRAP, dir, config.handler, eventFile, resultFile];
    const child = spawn(command[0]!, command.slice(1), { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let logs = '';
    child.stdout.on('data', (chunk: Buffer) => (logs += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (logs += chunk.toString()));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, config.timeoutSeconds * 1000);
    await new Promise<void>((resolve) => child.once('close', () => resolve()));
    clearTimeout(timer);
    // Lambda's answer to a function that ran out of time (errorType Sandbox.Timedout, "Task timed out after N
    // seconds").
    if (timedOut)
      return {
        result: {
          ok: false,
          errorType: 'Sandbox.Timedout',
          errorMessage: `Task timed out after ${config.timeoutSeconds}.00 seconds`,
        },
        logs,
      };
    if (!existsSync(resultFile))
      return {
        result: {
          ok: false,
          errorType: 'Runtime.ExitError',
          errorMessage: `RequestId: ${id} Error: Runtime exited with error: exit status ${child.exitCode}`,
        },
        logs,
      };
    return { result: JSON.parse(readFileSync(resultFile, 'utf8')) as Invocation['result'], logs };
  }
}
