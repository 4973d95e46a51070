import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { localWorkflowDefinition } from '../../local/workflow-runner';

/**
 * The local target runs the definition without aws-local-stepfunctions' validation (local/workflow-runner.ts): here it
 * is validated.
 */
describe("the local target's workflow definition", () => {
  test.each([1, 4])("passes aws-local-stepfunctions' validation (maxConcurrency %i)", (maxConcurrency) => {
    expect(() => new StateMachine(localWorkflowDefinition(maxConcurrency))).not.toThrow();
  });

  test('the validation it passes refuses a broken definition', () => {
    const definition = localWorkflowDefinition(1);
    const broken = { ...definition, StartAt: 'NoSuchState' } as StateMachineDefinition;
    expect(() => new StateMachine(broken)).toThrow();
  });
});
