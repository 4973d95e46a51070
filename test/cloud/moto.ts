import { type CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts, waitFor } from '../../local/ports';

/**
 * moto in server mode (PyPI moto[server], pinned in scripts/setup.sh, installed into .venv-tools): one HTTP endpoint
 * for every AWS service, which the real SDK v3 clients reach through `endpoint` / AWS_ENDPOINT_URL.
 * `executeStateMachines` switches on moto's Step Functions parser (the /moto-api/config endpoint sets
 * `stepfunctions.execute_state_machine`, moto's StepFunctionBackend docs, getmoto/moto
 * docs/docs/services/stepfunctions.rst; checked in moto 5.2.5's
 * moto/stepfunctions/responses.py get_backend):
 * without it an execution stays RUNNING until stopped; with it Pass/Wait/Choice states and the DynamoDB
 * service integration run against moto's own DynamoDB.
 */
export interface Moto {
  readonly endpoint: string;
  /** The environment a CLI child needs to talk to this moto (dummy credentials: moto checks no signature). */
  readonly env: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

const MOTO_SERVER = join(__dirname, '../../.venv-tools/bin/moto_server');

export interface StartMotoOptions {
  readonly executeStateMachines?: boolean;
  /**
   * Loads AWS's managed policies (PowerUserAccess, AWSLambdaBasicExecutionRole, ...) so that roles can attach them, as
   * the twin's deployed roles do: moto's MOTO_IAM_LOAD_MANAGED_POLICIES (getmoto/moto docs/docs/iam.rst, off by
   * default).
   */
  readonly managedPolicies?: boolean;
}

export async function startMoto(options: StartMotoOptions = {}): Promise<Moto> {
  if (!existsSync(MOTO_SERVER))
    throw new Error(`${MOTO_SERVER} is missing: run bash scripts/setup.sh (it installs moto[server] into .venv-tools)`);
  const [port] = await freePorts(1);
  const endpoint = `http://127.0.0.1:${port}`;
  let output = '';
  const serverEnv = { ...process.env, ...(options.managedPolicies ? { MOTO_IAM_LOAD_MANAGED_POLICIES: 'true' } : {}) };
  const child: ChildProcess = spawn(MOTO_SERVER, ['-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: serverEnv,
  });
  child.stdout!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  child.stderr!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`moto_server exited with ${child.exitCode}: ${output}`);
        try {
          return (await fetch(`${endpoint}/moto-api/reset`, { method: 'POST' })).ok ? true : undefined;
        } catch {
          return undefined;
        }
      },
      30_000,
      () => `moto_server did not answer on ${endpoint} within 30 s: ${output}`,
      200,
    );
    if (options.executeStateMachines) {
      const response = await fetch(`${endpoint}/moto-api/config`, {
        method: 'POST',
        body: JSON.stringify({ stepfunctions: { execute_state_machine: true } }),
      });
      if (!response.ok) throw new Error(`moto refused its configuration: ${response.status} ${await response.text()}`);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const env = {
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'testing',
    AWS_SECRET_ACCESS_KEY: 'testing',
  };
  return { endpoint, env, stop };
}

/** SDK client configuration for this moto. */
export function motoClientConfig(moto: Moto) {
  return {
    endpoint: moto.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  };
}

/**
 * A stack's status by name, or 'GONE' once it is deleted: DescribeStacks answers "does not exist" for a deleted stack's
 * name, as AWS does (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html).
 */
export async function stackStatusOrGone(cfn: CloudFormationClient, name: string): Promise<string | undefined> {
  try {
    return (await cfn.send(new DescribeStacksCommand({ StackName: name }))).Stacks?.[0]?.StackStatus;
  } catch (error) {
    if (/does not exist/.test((error as Error).message)) return 'GONE';
    throw error;
  }
}
