/**
 * A CloudFormation template's values as the stack that CreateStack makes would see them: parameters (with their
 * defaults and list types), pseudo parameters, and the intrinsic functions the synthesized cluster templates use
 * (Ref, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Split, Fn::Sub, Fn::Base64, Fn::If with the template's Conditions,
 * Fn::Equals, Fn::Not, Fn::And, Fn::Or; CloudFormation User Guide, "Intrinsic function reference",
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference.html). A reference the
 * twin cannot resolve is an error that names it: nothing is guessed.
 */
import { TWIN_ACCOUNT, TWIN_REGION } from './aws-requests';

export interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly CreationPolicy?: { ResourceSignal?: { Count?: unknown; Timeout?: string } };
  readonly Condition?: string;
  readonly DependsOn?: string | string[];
}

export interface StackTemplate {
  readonly Parameters?: Record<string, { Type: string; Default?: string }>;
  readonly Conditions?: Record<string, unknown>;
  readonly Resources: Record<string, TemplateResource>;
  readonly Outputs?: Record<string, { Value: unknown; Description?: string }>;
}

/** What the provisioner knows of a created resource: what Ref returns and its attributes (Fn::GetAtt). */
export interface PhysicalResource {
  readonly ref: string;
  readonly attributes?: Readonly<Record<string, string>>;
}

export interface StackContext {
  readonly stackName: string;
  readonly stackId: string;
  /** Parameter values as CreateStack passed them (strings; a List<...> is comma-separated). */
  readonly parameters: Readonly<Record<string, string>>;
  /** Values of AWS::SSM::Parameter::Value<...> parameters' names (CloudFormation reads them from Parameter Store). */
  readonly ssmParameters?: Readonly<Record<string, string>>;
  readonly physical: ReadonlyMap<string, PhysicalResource>;
}

type Value = string | number | boolean | Value[] | { [key: string]: Value };

export class TemplateEvaluator {
  constructor(
    private readonly template: StackTemplate,
    private readonly context: StackContext,
  ) {}

  /** The parameter's value: given, else its default; an SSM-typed parameter's value read from Parameter Store. */
  parameter(name: string): string | string[] {
    const declared = this.template.Parameters?.[name];
    if (!declared) throw new Error(`the template declares no parameter ${name}`);
    let value = this.context.parameters[name] ?? declared.Default;
    if (value === undefined)
      throw new Error(
        `parameter ${name} has no value and no default (CreateStack ` +
          `would fail with "Parameters: [${name}] must have values")`,
      );
    if (declared.Type.startsWith('AWS::SSM::Parameter::Value<')) {
      const resolved = this.context.ssmParameters?.[value];
      if (resolved === undefined)
        throw new Error(`parameter ${name} names the SSM parameter ${value}, which does not exist`);
      value = resolved;
    }
    return declared.Type.startsWith('List<') || declared.Type === 'CommaDelimitedList' ? value.split(',') : value;
  }

  condition(name: string): boolean {
    const expression = this.template.Conditions?.[name];
    if (expression === undefined) throw new Error(`the template has no condition ${name}`);
    return this.truth(expression);
  }

  private truth(expression: unknown): boolean {
    const object = expression as Record<string, unknown>;
    if (typeof object['Condition'] === 'string') return this.condition(object['Condition']);
    if (Array.isArray(object['Fn::Equals'])) {
      const [left, right] = (object['Fn::Equals'] as unknown[]).map((part) => JSON.stringify(this.resolve(part)));
      return left === right;
    }
    if (Array.isArray(object['Fn::Not'])) return !this.truth((object['Fn::Not'] as unknown[])[0]);
    if (Array.isArray(object['Fn::And'])) return (object['Fn::And'] as unknown[]).every((part) => this.truth(part));
    if (Array.isArray(object['Fn::Or'])) return (object['Fn::Or'] as unknown[]).some((part) => this.truth(part));
    throw new Error(`the twin cannot evaluate the condition ${JSON.stringify(expression)}`);
  }

  /** The value of `expression` with every intrinsic function applied (AWS::NoValue entries removed). */
  resolve(expression: unknown): Value {
    if (expression === null || typeof expression !== 'object') return expression as Value;
    if (Array.isArray(expression))
      return expression.filter((item) => !this.isNoValue(item)).map((item) => this.resolve(item));
    const object = expression as Record<string, unknown>;
    const keys = Object.keys(object);
    if (keys.length === 1 && (keys[0] === 'Ref' || keys[0]!.startsWith('Fn::')))
      return this.intrinsic(keys[0]!, object[keys[0]!]);
    return Object.fromEntries(
      keys.filter((key) => !this.isNoValue(object[key])).map((key) => [key, this.resolve(object[key])]),
    );
  }

  /** `resolve` for a value that must be a string (user data, names, ARNs). */
  string(expression: unknown): string {
    const value = this.resolve(expression);
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    if (typeof value !== 'string') throw new Error(`expected a string, got ${JSON.stringify(value).slice(0, 200)}`);
    return value;
  }

  private isNoValue(expression: unknown): boolean {
    return (
      typeof expression === 'object' &&
      expression !== null &&
      (expression as Record<string, unknown>)['Ref'] === 'AWS::NoValue'
    );
  }

  private pseudo(name: string): string | undefined {
    const values: Record<string, string> = {
      'AWS::Region': TWIN_REGION,
      'AWS::AccountId': TWIN_ACCOUNT,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
      'AWS::StackName': this.context.stackName,
      'AWS::StackId': this.context.stackId,
    };
    return values[name];
  }

  private physical(logicalId: string): PhysicalResource {
    if (!this.template.Resources[logicalId]) throw new Error(`the template has no resource ${logicalId}`);
    const physical = this.context.physical.get(logicalId);
    if (!physical) throw new Error(`${logicalId} is referenced before the twin created it`);
    return physical;
  }

  private intrinsic(name: string, argument: unknown): Value {
    switch (name) {
      case 'Ref': {
        const target = String(argument);
        const pseudo = this.pseudo(target);
        if (pseudo !== undefined) return pseudo;
        if (this.template.Parameters?.[target]) return this.parameter(target);
        return this.physical(target).ref;
      }
      case 'Fn::GetAtt': {
        const [logicalId, attribute] =
          typeof argument === 'string' ? (argument.split('.') as [string, string]) : (argument as [string, string]);
        const value = this.physical(logicalId).attributes?.[attribute];
        if (value === undefined)
          throw new Error(
            `the twin has no attribute ${attribute} of ${logicalId} (${this.template.Resources[logicalId]?.Type})`,
          );
        return value;
      }
      case 'Fn::Join': {
        const [separator, parts] = argument as [string, unknown];
        const list = this.resolve(parts);
        if (!Array.isArray(list)) throw new Error(`Fn::Join of a non-list ${JSON.stringify(list)}`);
        return list.map((part) => String(part)).join(separator);
      }
      case 'Fn::Select': {
        const [index, list] = argument as [unknown, unknown];
        const items = this.resolve(list);
        const position = Number(this.resolve(index));
        if (!Array.isArray(items) || position >= items.length)
          throw new Error(`Fn::Select index ${position} out of ${JSON.stringify(items)}`);
        return items[position]!;
      }
      case 'Fn::Split': {
        const [separator, source] = argument as [string, unknown];
        return this.string(source).split(separator);
      }
      case 'Fn::Base64':
        // Kept as text: the twin hands the decoded user data to the simulated instance, as EC2 does.
        return this.string(argument);
      case 'Fn::Sub': {
        const [text, variables] =
          typeof argument === 'string' ? [argument, {}] : (argument as [string, Record<string, unknown>]);
        return text.replace(/\$\{([^}!][^}]*)\}/g, (_match, reference: string) => {
          if (reference in variables) return this.string(variables[reference]);
          const [logicalId, attribute] = reference.split('.');
          return this.string(attribute ? { 'Fn::GetAtt': [logicalId, attribute] } : { Ref: logicalId });
        });
      }
      case 'Fn::If': {
        const [condition, whenTrue, whenFalse] = argument as [string, unknown, unknown];
        return this.resolve(this.condition(condition) ? whenTrue : whenFalse);
      }
      case 'Fn::GetAZs':
        return ['a', 'b', 'c'].map((zone) => `${TWIN_REGION}${zone}`);
      default:
        throw new Error(`the twin does not evaluate ${name}`);
    }
  }
}
