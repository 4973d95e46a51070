/**
 * Systems Manager Run Command on the twin's simulated instances: SendCommand of AWS-RunShellScript runs the commands
 * on each instance as the SSM agent runs them (as root, the agent's environment, one script of the `commands` lines,
 * stopped after `executionTimeout` seconds; Systems Manager User Guide, "AWS-RunShellScript" and "Running commands
 * using Systems Manager Run Command"), and GetCommandInvocation answers from what ran, in the API's shape: Status
 * InProgress / Success / Failed / TimedOut, ResponseCode, StandardOutputContent (at most 24,000 characters) and
 * StandardErrorContent (at most 8,000; SSM API Reference, GetCommandInvocation). The instance's own packet filter and
 * role apply to whatever the script does.
 */
import { randomUUID } from 'node:crypto';
import { ec2UserDataEnvironment } from '../simulated-vm/harness';
import { TWIN_REGION } from './aws-requests';
import type { ClusterStack, SimulatedInstance } from './cluster-stack';

interface Invocation {
  readonly commandId: string;
  readonly instanceId: string;
  readonly documentName: string;
  status: 'InProgress' | 'Success' | 'Failed' | 'TimedOut';
  responseCode: number;
  stdout: string;
  stderr: string;
  readonly requestedAt: Date;
}

/** What SendCommand answers (its Command), and the invocations it started. */
export class SsmCommands {
  private readonly invocations = new Map<string, Invocation>();

  /** Starts the document on each instance; the Command object SendCommand answers. */
  send(
    params: Record<string, unknown>,
    targets: readonly { stack: ClusterStack; instance: SimulatedInstance }[],
  ): Record<string, unknown> {
    const documentName = String(params['DocumentName']);
    if (documentName !== 'AWS-RunShellScript')
      throw new Error(`the twin runs only AWS-RunShellScript on its instances, not ${documentName}`);
    const parameters = (params['Parameters'] as Record<string, string[]> | undefined) ?? {};
    const script = (parameters['commands'] ?? []).join('\n');
    const timeoutSeconds = Number(parameters['executionTimeout']?.[0] ?? 3600);
    const commandId = randomUUID();
    const requestedAt = new Date();
    for (const { stack, instance } of targets) {
      const invocation: Invocation = {
        commandId,
        instanceId: instance.instanceId,
        documentName,
        status: 'InProgress',
        responseCode: -1,
        stdout: '',
        stderr: '',
        requestedAt,
      };
      this.invocations.set(`${commandId}/${instance.instanceId}`, invocation);
      const started = Date.now();
      void stack
        .simulatedHub!.exec(instance.vm, script, {
          env: ec2UserDataEnvironment(TWIN_REGION),
          timeoutMs: timeoutSeconds * 1000,
        })
        .then((result) => {
          const timedOut = result.status !== 0 && Date.now() - started >= timeoutSeconds * 1000;
          Object.assign(invocation, {
            status: timedOut ? 'TimedOut' : result.status === 0 ? 'Success' : 'Failed',
            responseCode: timedOut ? -1 : result.status,
            stdout: result.stdout,
            stderr: result.stderr,
          });
        });
    }
    return {
      CommandId: commandId,
      DocumentName: documentName,
      InstanceIds: targets.map((target) => target.instance.instanceId),
      Parameters: parameters,
      RequestedDateTime: requestedAt.getTime() / 1000,
      Status: 'Pending',
      TargetCount: targets.length,
    };
  }

  /** GetCommandInvocation's answer, or undefined (InvocationDoesNotExist) for a command the twin did not start. */
  invocation(commandId: string, instanceId: string): Record<string, unknown> | undefined {
    const invocation = this.invocations.get(`${commandId}/${instanceId}`);
    if (!invocation) return undefined;
    return {
      CommandId: invocation.commandId,
      InstanceId: invocation.instanceId,
      DocumentName: invocation.documentName,
      PluginName: 'aws:runShellScript',
      Status: invocation.status,
      StatusDetails: invocation.status === 'TimedOut' ? 'ExecutionTimedOut' : invocation.status,
      ResponseCode: invocation.responseCode,
      StandardOutputContent: invocation.stdout.slice(0, 24_000),
      StandardErrorContent: invocation.stderr.slice(0, 8_000),
      ExecutionStartDateTime: invocation.requestedAt.toISOString(),
    };
  }
}
