export * from './definition';
export * from './schedule';
export * from './states';
export type { AslState, AslStates, WorkflowTimings } from './phases';
export * from './run-outcome';
