import { App, CfnOutput, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { BenchmarkController, type BenchmarkAzureProps } from '../../cdk';
import { CONTROLLER_OUTPUTS, DEFAULT_CONTROLLER_STACK } from '../../core/cloud/controller-outputs';

export { CONTROLLER_OUTPUTS, DEFAULT_CONTROLLER_STACK };

/**
 * What the controller app reads from CDK context (`cdk deploy -c key=value` or cdk.json), all optional:
 * Azure is off unless `azureCredentialsSecretArn` is given.
 */
export interface ControllerAppContext {
  /** Secrets Manager ARN of the Azure service principal JSON (see BenchmarkAzureProps.credentialsSecret). */
  readonly azureCredentialsSecretArn?: string;
  /** Azure region of the run's resource groups. @default 'westeurope' */
  readonly azureLocation?: string;
  /**
   * The compiled ARM JSON of bicep/main.bicep (`bicep build bicep/main.bicep --outfile main.json`). @default
   * 'main.json'
   */
  readonly azureTemplateFile?: string;
  /**
   * Secrets Manager ARN of a second, fault-only service principal (see BenchmarkAzureProps.faultCredentialsSecret);
   * give azureFaultPrincipalId with it.
   */
  readonly azureFaultCredentialsSecretArn?: string;
  /** The object id of that principal (BenchmarkAzureProps.faultPrincipalId). */
  readonly azureFaultPrincipalId?: string;
}

/** One BenchmarkController with the outputs a user needs to start runs and read results. */
export class RmqbenchControllerStack extends Stack {
  public readonly controller: BenchmarkController;

  constructor(scope: Construct, id: string, context: ControllerAppContext = {}, props?: StackProps) {
    super(scope, id, props);
    const azure: BenchmarkAzureProps | undefined =
      context.azureCredentialsSecretArn === undefined
        ? undefined
        : {
            credentialsSecret: secretsmanager.Secret.fromSecretCompleteArn(
              this,
              'AzureCredentials',
              context.azureCredentialsSecretArn,
            ),
            location: context.azureLocation ?? 'westeurope',
            templateFile: context.azureTemplateFile ?? 'main.json',
            ...(context.azureFaultCredentialsSecretArn === undefined
              ? {}
              : {
                  faultCredentialsSecret: secretsmanager.Secret.fromSecretCompleteArn(
                    this,
                    'AzureFaultCredentials',
                    context.azureFaultCredentialsSecretArn,
                  ),
                }),
            ...(context.azureFaultPrincipalId === undefined ? {} : { faultPrincipalId: context.azureFaultPrincipalId }),
          };
    this.controller = new BenchmarkController(this, 'Controller', azure ? { azure } : {});
    new CfnOutput(this, CONTROLLER_OUTPUTS.stateMachineArn, {
      value: this.controller.stateMachine.stateMachineArn,
      description:
        'Start a run: rmqbench run <plan> --target aws (reads this output), ' +
        'or aws stepfunctions start-execution with rmqbench execution-input as --input',
    });
    new CfnOutput(this, CONTROLLER_OUTPUTS.resultsTableName, {
      value: this.controller.resultsTable.tableName,
      description: 'DynamoDB table with every run and repetition',
    });
    new CfnOutput(this, CONTROLLER_OUTPUTS.rawOutputBucketName, {
      value: this.controller.rawOutputBucket.bucketName,
      description: 'Raw PerfTest output per run (runs/<runId>/...)',
    });
  }
}

/** Context values as strings (`-c key=value`), unknown keys ignored. */
export function controllerContext(app: App): ControllerAppContext {
  const read = (key: keyof ControllerAppContext) => {
    const value = app.node.tryGetContext(key) as unknown;
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  };
  const arn = read('azureCredentialsSecretArn');
  const location = read('azureLocation');
  const templateFile = read('azureTemplateFile');
  const faultArn = read('azureFaultCredentialsSecretArn');
  const faultPrincipalId = read('azureFaultPrincipalId');
  return {
    ...(arn ? { azureCredentialsSecretArn: arn } : {}),
    ...(location ? { azureLocation: location } : {}),
    ...(templateFile ? { azureTemplateFile: templateFile } : {}),
    ...(faultArn ? { azureFaultCredentialsSecretArn: faultArn } : {}),
    ...(faultPrincipalId ? { azureFaultPrincipalId: faultPrincipalId } : {}),
  };
}

/**
 * The controller app, checked by cdk-nag's AwsSolutions pack (synthesis reports an unacknowledged finding as an error).
 */
export function buildControllerApp(options: { outdir?: string; context?: Record<string, string> } = {}): App {
  const app = new App({
    ...(options.outdir ? { outdir: options.outdir } : {}),
    ...(options.context ? { context: options.context } : {}),
  });
  new RmqbenchControllerStack(app, DEFAULT_CONTROLLER_STACK, controllerContext(app));
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return app;
}
