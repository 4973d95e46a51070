/**
 * IAM identity-based policy evaluation for the cloud twin: whether a principal's policies allow one action on one
 * resource, as AWS decides it for a request inside one account with no resource policy, permissions boundary, session
 * policy or SCP (IAM User Guide, "Policy evaluation logic",
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html): an explicit Deny in any
 * statement wins; otherwise an Allow in any statement allows; otherwise the request is implicitly denied.
 *
 * Why not moto's own enforcement (INITIAL_NO_AUTH_ACTION_COUNT): moto 5.2.5 matches statements with resource ARNs
 * only for a few services and treats every other resource-scoped Allow as not matching, so the controller's
 * least-privilege grants (a table ARN, stack/rmqbench-*) would all be denied.
 *
 * Matching rules, from the IAM JSON policy element reference
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements.html):
 * - Action / NotAction: `service:Name`, case-insensitive, `*` and `?` wildcards.
 * - Resource / NotResource: ARN, case-sensitive, `*` (any characters, `/` and `:` included) and `?`; policy variables
 *   `${aws:PrincipalTag/key}` are replaced by the request's value, and a statement whose variable has no value does
 *   not match (reference_policies_variables.html, "Non-existent policy variables").
 * - Condition: every operator block and every key in it must hold (AND), any of a key's values (OR); keys are
 *   case-insensitive; a key missing from the request makes a positive operator false and a negated one true, and an
 *   `...IfExists` operator true (reference_policies_elements_condition_operators.html).
 */

export interface PolicyStatement {
  readonly Sid?: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Action?: string | readonly string[];
  readonly NotAction?: string | readonly string[];
  readonly Resource?: string | readonly string[];
  readonly NotResource?: string | readonly string[];
  readonly Condition?: Record<string, Record<string, string | boolean | readonly (string | boolean)[]>>;
}

export interface PolicyDocument {
  readonly Version?: string;
  readonly Statement: PolicyStatement | readonly PolicyStatement[];
}

/** A policy with the name it is reported by (e.g. `inline RunRecordFunctionServiceRoleDefaultPolicy`). */
export interface NamedPolicy {
  readonly name: string;
  readonly document: PolicyDocument;
}

export interface AuthorizationRequest {
  /** `service:Action`, e.g. dynamodb:PutItem. */
  readonly action: string;
  /** The resource ARN, or `*` for an action that supports no resource-level permission. */
  readonly resource: string;
  /**
   * Condition keys of the request (aws:PrincipalTag/x, ssm:resourceTag/x, aws:RequestTag/x, ...), matched
   * case-insensitively.
   */
  readonly context?: Readonly<Record<string, string | readonly string[]>>;
}

export type Decision =
  | { readonly allowed: true; readonly by: string }
  | { readonly allowed: false; readonly explicitDeny?: string; readonly reason: string };

const list = <T>(value: T | readonly T[] | undefined): readonly T[] =>
  value === undefined ? [] : Array.isArray(value) ? (value as readonly T[]) : [value as T];

/** `*` and `?` wildcards of IAM (everything else literal). */
export function wildcardMatches(pattern: string, value: string, caseInsensitive = false): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, caseInsensitive ? 'is' : 's').test(value);
}

function contextValue(context: AuthorizationRequest['context'], key: string): readonly string[] | undefined {
  if (!context) return undefined;
  const found = Object.keys(context).find((candidate) => candidate.toLowerCase() === key.toLowerCase());
  return found === undefined ? undefined : list(context[found]);
}

/** Replaces `${key}` policy variables; undefined when one has no value in the request. */
function substituteVariables(text: string, context: AuthorizationRequest['context']): string | undefined {
  let missing = false;
  const replaced = text.replace(/\$\{([^}]+)\}/g, (_match, key: string) => {
    if (key === '*' || key === '?' || key === '$') return key;
    const value = contextValue(context, key);
    if (!value || value.length !== 1) {
      missing = true;
      return '';
    }
    return value[0]!;
  });
  return missing ? undefined : replaced;
}

type Comparator = (expected: string, actual: string) => boolean;
const COMPARATORS: Record<string, { compare: Comparator; negated: boolean }> = {
  StringEquals: { compare: (e, a) => e === a, negated: false },
  StringNotEquals: { compare: (e, a) => e === a, negated: true },
  StringEqualsIgnoreCase: { compare: (e, a) => e.toLowerCase() === a.toLowerCase(), negated: false },
  StringNotEqualsIgnoreCase: { compare: (e, a) => e.toLowerCase() === a.toLowerCase(), negated: true },
  StringLike: { compare: (e, a) => wildcardMatches(e, a), negated: false },
  StringNotLike: { compare: (e, a) => wildcardMatches(e, a), negated: true },
  ArnEquals: { compare: (e, a) => e === a, negated: false },
  ArnLike: { compare: (e, a) => wildcardMatches(e, a), negated: false },
  ArnNotEquals: { compare: (e, a) => e === a, negated: true },
  ArnNotLike: { compare: (e, a) => wildcardMatches(e, a), negated: true },
  Bool: { compare: (e, a) => e.toLowerCase() === a.toLowerCase(), negated: false },
};

function conditionHolds(
  operatorName: string,
  keys: Record<string, unknown>,
  context: AuthorizationRequest['context'],
): boolean {
  const setPrefix = /^(ForAnyValue|ForAllValues):/.exec(operatorName)?.[1];
  const withoutSet = operatorName.replace(/^(ForAnyValue|ForAllValues):/, '');
  const ifExists = withoutSet.endsWith('IfExists');
  const base = ifExists ? withoutSet.slice(0, -'IfExists'.length) : withoutSet;
  if (base === 'Null') {
    return Object.entries(keys).every(
      ([key, expected]) => String(expected).toLowerCase() === String(contextValue(context, key) === undefined),
    );
  }
  const operator = COMPARATORS[base];
  if (!operator) throw new Error(`the twin's IAM evaluator does not know the condition operator ${operatorName}`);
  return Object.entries(keys).every(([key, raw]) => {
    const actual = contextValue(context, key);
    if (actual === undefined || actual.length === 0)
      return ifExists || operator.negated || setPrefix === 'ForAllValues';
    const expected = list(raw as string | readonly string[]).map((value) =>
      substituteVariables(String(value), context),
    );
    const anyMatches = (value: string) =>
      expected.some((pattern) => pattern !== undefined && operator.compare(pattern, value));
    const matched = setPrefix === 'ForAllValues' ? actual.every(anyMatches) : actual.some(anyMatches);
    return operator.negated ? !matched : matched;
  });
}

function statementApplies(statement: PolicyStatement, request: AuthorizationRequest): boolean {
  const actionMatches = (patterns: readonly string[]) =>
    patterns.some((pattern) => wildcardMatches(pattern, request.action, true));
  if (statement.Action !== undefined && !actionMatches(list(statement.Action))) return false;
  if (statement.NotAction !== undefined && actionMatches(list(statement.NotAction))) return false;
  const resourceMatches = (patterns: readonly string[]) =>
    patterns.some((pattern) => {
      const concrete = substituteVariables(pattern, request.context);
      return concrete !== undefined && wildcardMatches(concrete, request.resource);
    });
  if (statement.Resource !== undefined && !resourceMatches(list(statement.Resource))) return false;
  if (statement.NotResource !== undefined && resourceMatches(list(statement.NotResource))) return false;
  return Object.entries(statement.Condition ?? {}).every(([operator, keys]) =>
    conditionHolds(operator, keys, request.context),
  );
}

/** The decision of `policies` (all of one principal) on `request`. */
export function evaluate(policies: readonly NamedPolicy[], request: AuthorizationRequest): Decision {
  let allowedBy: string | undefined;
  for (const policy of policies) {
    for (const statement of list(policy.document.Statement)) {
      if (!statementApplies(statement, request)) continue;
      const label = statement.Sid ? `${policy.name} (${statement.Sid})` : policy.name;
      if (statement.Effect === 'Deny')
        return { allowed: false, explicitDeny: label, reason: `with an explicit deny in ${label}` };
      allowedBy ??= label;
    }
  }
  if (allowedBy) return { allowed: true, by: allowedBy };
  return { allowed: false, reason: `because no identity-based policy allows the ${request.action} action` };
}

/** AWS's words for a denial (the message its services return in AccessDenied errors). */
export function denialMessage(
  principalArn: string,
  request: AuthorizationRequest,
  decision: Extract<Decision, { allowed: false }>,
): string {
  return (
    `User: ${principalArn} is not authorized to perform: ` +
    `${request.action} on resource: ${request.resource} ${decision.reason}`
  );
}
