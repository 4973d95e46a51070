import {
  AslStates,
  buildClustersPhase,
  buildFinishPhase,
  buildRecordStartPhase,
  buildValidatePhase,
  WorkflowTimings,
} from './phases';
import { CLUSTER_POLL_SECONDS, EXECUTION_TIMEOUT_SECONDS } from '../core/cloud/workflow-shape';
import { FUNCTION_PLACEHOLDERS, FunctionPlaceholder, STATE } from './states';

export interface BenchmarkDefinitionOptions {
  /** Cluster configurations launched at the same time. @default 4 */
  readonly maxConcurrency?: number;
  /** @default 30 (CLUSTER_POLL_SECONDS) */
  readonly clusterPollSeconds?: number;
  /** Upper bound of a whole execution. @default 86400 (24 h, EXECUTION_TIMEOUT_SECONDS) */
  readonly timeoutSeconds?: number;
}

export interface BenchmarkDefinition {
  readonly Comment: string;
  readonly StartAt: string;
  readonly TimeoutSeconds: number;
  readonly States: AslStates;
}

/**
 * The benchmark workflow as plain ASL JSON, with `${<Function>Arn}` placeholders as Task resources.
 * The one source of the definition: the construct deploys it (DefinitionSubstitutions), the local
 * runner executes it (aws-local-stepfunctions, Task states mapped to the local target).
 */
export function buildBenchmarkDefinition(options: BenchmarkDefinitionOptions = {}): BenchmarkDefinition {
  const maxConcurrency = options.maxConcurrency ?? 4;
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > 40) {
    throw new Error(`maxConcurrency must be an integer from 1 to 40 (got ${maxConcurrency})`);
  }
  const timings: WorkflowTimings = {
    clusterPollSeconds: options.clusterPollSeconds ?? CLUSTER_POLL_SECONDS,
  };
  return {
    Comment:
      'rmqbench: validate a plan, then per cluster configuration launch, smoke-test, run PerfTest, ' +
      'ingest and always tear down',
    StartAt: STATE.validatePlan,
    TimeoutSeconds: options.timeoutSeconds ?? EXECUTION_TIMEOUT_SECONDS,
    States: {
      ...buildValidatePhase(STATE.recordRunStart, STATE.recordRunFailure),
      ...buildRecordStartPhase(STATE.forEachCluster, STATE.recordRunFailure),
      ...buildClustersPhase(STATE.finishRun, STATE.recordRunFailure, maxConcurrency, timings),
      ...buildFinishPhase(),
    },
  };
}

/** Fills the function placeholders (for asl-validator and the local runner, which only need well-formed ARNs). */
export function resolveResources(
  definition: BenchmarkDefinition,
  arns: Partial<Record<FunctionPlaceholder, string>> = {},
): BenchmarkDefinition {
  const text = JSON.stringify(definition).replace(/\$\{([A-Za-z]+)\}/g, (match, name: string) => {
    if (!(FUNCTION_PLACEHOLDERS as string[]).includes(name)) return match;
    return (
      arns[name as FunctionPlaceholder] ??
      `arn:aws:lambda:us-east-1:123456789012:function:rmqbench-${name.replace(/FunctionArn$/, '')}`
    );
  });
  return JSON.parse(text) as BenchmarkDefinition;
}

/** Every state name in the definition, nested ones included. */
export function stateNames(definition: { States: AslStates }): string[] {
  return Object.entries(definition.States).flatMap(([name, state]) => {
    const processor = (state.ItemProcessor ?? state.Iterator) as { States: AslStates } | undefined;
    return [name, ...(processor ? stateNames(processor) : [])];
  });
}
