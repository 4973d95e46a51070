// The one export RunRecord's failure path loads on demand: importing core/plan/plan.ts itself dynamically would keep
// every
// export of it (parsePlanText, and so the YAML parser) in the chunk; through this module esbuild drops what is unused.
export { repetitionsAsWritten, validatePlan } from '../../core/plan/plan';
