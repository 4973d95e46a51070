/**
 * Evaluates a Bicep deployment as ARM evaluates the compiled template: parameters validated (type, user-defined types
 * with their imports (bicep-types.ts), @allowed, @minValue/@maxValue, @minLength/@maxLength, required, unknown),
 * variables, conditional and looped resources and modules, module outputs, and the template's outputs. There is no
 * Bicep compiler on this machine, so the files are read through the tree-sitter Bicep grammar
 * (test/bicep/bicep-tree.ts) and evaluated here.
 *
 * What ARM knows only once a resource exists (an identity's clientId, a dynamic private IP, a public IP address) is
 * asked of `options.runtime`; without an answer it is the declared value when the body declares it, a sub-resource's id
 * (`vnet.properties.subnets[0].id`) as ARM forms it, else a placeholder that names its origin (see runtimePlaceholder).
 *
 * Anything this evaluator does not implement throws UnsupportedBicepError naming the file, line and construct: it never
 * guesses a value.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import type { Node } from 'web-tree-sitter';
import { BICEP_DIR, parseBicepFile, syntaxErrors } from '../../bicep/bicep-tree';
import type {
  BicepFile,
  ModuleDeclaration,
  OutputDeclaration,
  ParamDeclaration,
  ResourceDeclaration,
} from '../../bicep/bicep-tree';
import {
  ARM_TYPE_NAMES,
  type BicepType,
  TypeReader,
  armTypeOf,
  deepEqual,
  importsOf,
  isNullable,
  isPrimitiveType,
  isRecord,
  type PrimitiveType,
  typeProblem,
} from './bicep-types';

export interface DeploymentContext {
  readonly subscriptionId: string;
  readonly tenantId: string;
  readonly resourceGroup: string;
  /** resourceGroup().location. */
  readonly location: string;
  /** deployment().name of the top-level deployment. */
  readonly deploymentName: string;
}

export interface EvaluatedResource {
  /** The symbolic name in its file, e.g. 'scaleSet' (the same for every element of a loop). */
  readonly symbolicName: string;
  /** Module symbolic names from main.bicep down: [] for main.bicep, ['cluster'] for a resource of module `cluster`. */
  readonly modulePath: readonly string[];
  readonly type: string;
  readonly apiVersion: string;
  /** The full ARM name, e.g. 'vault/secretName' for a child declared with `parent:`. */
  readonly name: string;
  /** The resource id as ARM forms it (child types interleaved, extension resources under their scope's id). */
  readonly id: string;
  /** Declared `existing`: referenced, not deployed. */
  readonly existing: boolean;
  /** The id of the resource named in `scope:` (an extension resource such as a role assignment); absent otherwise. */
  readonly scope?: string;
  /** The evaluated body (location, tags, sku, zones, identity, properties, kind, ...) without name, parent, scope and
   * dependsOn. Null-valued object properties are left out, as ARM leaves them out of the request. */
  readonly body: Record<string, unknown>;
}

export interface EvaluatedDeployment {
  /** Every resource whose condition holds, main.bicep's and its modules', in declaration order. */
  readonly resources: readonly EvaluatedResource[];
  /** main.bicep's outputs. */
  readonly outputs: Record<string, unknown>;
}

/**
 * A value ARM knows only after creating the resource: `property` is the path after the symbol, e.g. ['properties',
 * 'clientId'] or ['properties', 'frontendIPConfigurations', '0', 'properties', 'privateIPAddress'] (array indexes as
 * strings). Return undefined to fall back to the declared value or a placeholder.
 */
export type RuntimeLookup = (resource: EvaluatedResource, property: readonly string[]) => unknown;

export interface EvaluateOptions {
  /** The template. @default bicep/main.bicep */
  readonly file?: string;
  /** Runtime values of deployed resources. @default - placeholders (see runtimePlaceholder) */
  readonly runtime?: RuntimeLookup;
}

/** A deployment ARM would refuse (invalid parameter, fail() reached, bad reference), with ARM's error `code`. */
export class BicepDeploymentError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'BicepDeploymentError';
  }
}

/** Syntax or a function this evaluator does not implement: a gap in the twin, not a verdict on the template. */
export class UnsupportedBicepError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedBicepError';
  }
}

/** fail() reached; the declaration being evaluated turns it into a BicepDeploymentError that says where. */
class TemplateFailure extends Error {}

/** Parameters are plain values (not ARM's `{ value }` wrappers). Resolves once every resource and output is known. */
export async function evaluateDeployment(
  parameters: Readonly<Record<string, unknown>>,
  context: DeploymentContext,
  options: EvaluateOptions = {},
): Promise<EvaluatedDeployment> {
  const file = resolve(options.file ?? join(BICEP_DIR, 'main.bicep'));
  const templates = await loadTemplates(file);
  const root = new Scope({ context, runtime: options.runtime, templates }, templateAt(templates, file), [], {
    name: context.deploymentName,
    parameters,
  });
  root.validate();
  const resources = root.resources();
  return { resources, outputs: root.outputs() };
}

// ---------------------------------------------------------------------------------------------------------------------
// Templates: the tree-sitter nodes turned into expressions once per file.

type Expr =
  | { readonly kind: 'literal'; readonly at: string; readonly value: null | boolean | number }
  | { readonly kind: 'string'; readonly at: string; readonly parts: readonly (string | Expr)[] }
  | { readonly kind: 'identifier'; readonly at: string; readonly name: string }
  | { readonly kind: 'group'; readonly at: string; readonly inner: Expr }
  | {
      readonly kind: 'member';
      readonly at: string;
      readonly object: Expr;
      readonly property: string;
      readonly safe: boolean;
    }
  | { readonly kind: 'index'; readonly at: string; readonly object: Expr; readonly index: Expr; readonly safe: boolean }
  | { readonly kind: 'call'; readonly at: string; readonly name: string; readonly args: readonly Expr[] }
  | { readonly kind: 'unary'; readonly at: string; readonly operator: string; readonly operand: Expr }
  | {
      readonly kind: 'binary';
      readonly at: string;
      readonly operator: string;
      readonly left: Expr;
      readonly right: Expr;
    }
  | {
      readonly kind: 'ternary';
      readonly at: string;
      readonly condition: Expr;
      readonly then: Expr;
      readonly otherwise: Expr;
    }
  | { readonly kind: 'array'; readonly at: string; readonly items: readonly Expr[] }
  | ObjectExpr
  | ForExpr
  | LambdaExpr;
interface ObjectExpr {
  readonly kind: 'object';
  readonly at: string;
  readonly properties: readonly { readonly key: Expr; readonly value: Expr }[];
}
interface ForExpr {
  readonly kind: 'for';
  readonly at: string;
  readonly item: string;
  readonly index: string | undefined;
  readonly source: Expr;
  readonly condition: Expr | undefined;
  readonly body: Expr;
}
interface LambdaExpr {
  readonly kind: 'lambda';
  readonly at: string;
  readonly params: readonly string[];
  readonly body: Expr;
}
type CallExpr = Extract<Expr, { kind: 'call' }>;

interface ParamDecl {
  readonly name: string;
  /** Its type: a primitive one, or a user-defined one (bicep-types.ts). */
  readonly type: BicepType;
  readonly defaultValue: Expr | undefined;
  /** Decorator name → its arguments (`allowed` → [array], `secure` → []). */
  readonly decorators: ReadonlyMap<string, readonly Expr[]>;
}
interface DeclarationBody {
  readonly condition?: Expr | undefined;
  readonly loop?: ForExpr;
  readonly body: ObjectExpr;
}
interface ResourceDecl extends DeclarationBody {
  readonly kind: 'resource';
  readonly symbol: string;
  readonly type: string;
  readonly apiVersion: string;
  readonly existing: boolean;
  readonly order: number;
}
interface ModuleDecl extends DeclarationBody {
  readonly kind: 'module';
  readonly symbol: string;
  /** Absolute path of the module's file. */
  readonly path: string;
  readonly order: number;
}
interface OutputDecl {
  readonly name: string;
  readonly type: PrimitiveType;
  readonly value: Expr;
}
interface Template {
  /** Relative to the top-level template's folder, for messages: 'modules/cluster.bicep'. */
  readonly display: string;
  readonly path: string;
  readonly params: readonly ParamDecl[];
  readonly variables: ReadonlyMap<string, Expr>;
  readonly declarations: readonly (ResourceDecl | ModuleDecl)[];
  readonly outputs: readonly OutputDecl[];
}

/**
 * The top-level file and every module it reaches, converted before evaluation so that evaluation is synchronous; the
 * types each imports are read from the files they come from first.
 */
async function loadTemplates(root: string): Promise<ReadonlyMap<string, Template>> {
  const templates = new Map<string, Template>();
  const exports: ExportedTypes = { root, byPath: new Map() };
  const pending = [root];
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    if (templates.has(path)) continue;
    const display = relative(dirname(root), path);
    const file = await parseBicepFile(path);
    const template = convertTemplate(file, display, await importedTypes(file, exports));
    templates.set(path, template);
    for (const declaration of template.declarations) if (declaration.kind === 'module') pending.push(declaration.path);
  }
  return templates;
}

/** The @export() types of every file imported from, each read once. */
interface ExportedTypes {
  readonly root: string;
  readonly byPath: Map<string, Promise<ReadonlyMap<string, BicepType>>>;
}

/** The types `file` imports (compile-time imports of @export() types), by name. */
async function importedTypes(file: BicepFile, exports: ExportedTypes): Promise<ReadonlyMap<string, BicepType>> {
  const display = relative(dirname(exports.root), file.path);
  const converter = new Converter(display);
  const found = new Map<string, BicepType>();
  const imports = importsOf(file.tree.rootNode, file.path, (node, what) => converter.unsupported(node, what));
  for (const [path, names] of imports) {
    let exported = exports.byPath.get(path);
    if (!exported) {
      exported = (async () => {
        const source = await parseBicepFile(path);
        const sourceConverter = new Converter(relative(dirname(exports.root), path));
        const imported = await importedTypes(source, exports);
        return new TypeReader(source.tree.rootNode, imported, (node, what) =>
          sourceConverter.unsupported(node, what),
        ).exported();
      })();
      exports.byPath.set(path, exported);
    }
    const types = await exported;
    for (const name of names) {
      const type = types.get(name);
      if (!type) {
        throw new UnsupportedBicepError(
          `${display}: '${name}' is not an exported type of ${relative(dirname(file.path), path)}`,
        );
      }
      found.set(name, type);
    }
  }
  return found;
}

function templateAt(templates: ReadonlyMap<string, Template>, path: string): Template {
  const template = templates.get(path);
  if (!template) throw new Error(`template ${path} was not loaded`);
  return template;
}

const SUPPORTED_STATEMENTS = new Set([
  'metadata_declaration',
  'target_scope_assignment',
  'parameter_declaration',
  'variable_declaration',
  'resource_declaration',
  'module_declaration',
  'output_declaration',
  'type_declaration',
  'import_functionality',
  'decorators',
  'comment',
  'diagnostic_comment',
]);

function convertTemplate(file: BicepFile, display: string, imported: ReadonlyMap<string, BicepType>): Template {
  const converter = new Converter(display);
  const types = new TypeReader(file.tree.rootNode, imported, (node, what) => converter.unsupported(node, what));
  const [syntaxError] = syntaxErrors(file.tree);
  if (syntaxError) throw new UnsupportedBicepError(`${display}: syntax error at ${syntaxError}`);
  for (const statement of namedOf(file.tree.rootNode)) {
    if (!SUPPORTED_STATEMENTS.has(statement.type)) converter.unsupported(statement);
  }
  if (file.targetScope !== undefined && file.targetScope !== 'resourceGroup') {
    throw new UnsupportedBicepError(`${display}: unsupported targetScope '${file.targetScope}'`);
  }
  const declarations = [
    ...file.resources.map((resource) => converter.resource(resource)),
    ...file.modules.map((module) => converter.module(module, file.path)),
  ].sort((a, b) => a.order - b.order);
  return {
    display,
    path: file.path,
    params: [...file.params.values()].map((param) => converter.param(param, types)),
    variables: new Map([...file.variables].map(([name, node]) => [name, converter.expr(node)])),
    declarations,
    outputs: [...file.outputs.values()].map((output) => converter.output(output)),
  };
}

const isTrivia = (node: Node): boolean => node.type === 'comment' || node.type === 'diagnostic_comment';
const namedOf = (node: Node): Node[] =>
  node.namedChildren.filter((child): child is Node => child !== null && !isTrivia(child));
const tokensOf = (node: Node): string[] =>
  node.children.filter((child): child is Node => child !== null && !child.isNamed).map((child) => child.type);

/** Bicep's binary operators by precedence (higher binds tighter). */
const PRECEDENCE: Readonly<Record<string, number>> = {
  '??': 1,
  '||': 2,
  '&&': 3,
  '==': 4,
  '!=': 4,
  '=~': 4,
  '!~': 4,
  '<': 5,
  '<=': 5,
  '>': 5,
  '>=': 5,
  '+': 6,
  '-': 6,
  '*': 7,
  '/': 7,
  '%': 7,
};

/**
 * tree-sitter-bicep parses `c ? a : b.x` as `(c ? a : b).x` and `!a.b` as `(!a).b`. In Bicep member access, indexing
 * and calls bind tighter than every operator, so an accessor written after an unparenthesized operator expression
 * belongs to that expression's rightmost operand.
 */
function attachPostfix(object: Expr, wrap: (inner: Expr) => Expr): Expr {
  switch (object.kind) {
    case 'unary':
      return { ...object, operand: attachPostfix(object.operand, wrap) };
    case 'binary':
      return { ...object, right: attachPostfix(object.right, wrap) };
    case 'ternary':
      return { ...object, otherwise: attachPostfix(object.otherwise, wrap) };
    case 'lambda':
      return { ...object, body: attachPostfix(object.body, wrap) };
    default:
      return wrap(object);
  }
}

/** `expr` with its leftmost operand replaced by `replace(leaf)`; undefined where that gives undefined. */
function replaceLeftmost(expr: Expr, replace: (leaf: Expr) => Expr | undefined): Expr | undefined {
  const inner = (child: Expr) => replaceLeftmost(child, replace);
  switch (expr.kind) {
    case 'binary': {
      const left = inner(expr.left);
      return left && { ...expr, left };
    }
    case 'ternary': {
      const condition = inner(expr.condition);
      return condition && { ...expr, condition };
    }
    case 'member':
    case 'index': {
      const object = inner(expr.object);
      return object && { ...expr, object };
    }
    default:
      return replace(expr);
  }
}

class Converter {
  constructor(private readonly display: string) {}

  at(node: Node): string {
    return `${this.display}:${node.startPosition.row + 1}`;
  }

  unsupported(node: Node, what: string = node.type): never {
    const text = node.text.replace(/\s+/g, ' ').slice(0, 80);
    throw new UnsupportedBicepError(`${this.at(node)}: unsupported ${what}: ${text}`);
  }

  private field(node: Node, name: string): Node {
    return node.childForFieldName(name) ?? this.unsupported(node, `${node.type} without ${name}`);
  }

  expr(node: Node): Expr {
    const at = this.at(node);
    switch (node.type) {
      case 'number':
        return /^-?\d+$/.test(node.text) ? { kind: 'literal', at, value: Number(node.text) } : this.unsupported(node);
      case 'boolean':
        return { kind: 'literal', at, value: node.text === 'true' };
      case 'null':
        return { kind: 'literal', at, value: null };
      case 'string':
        return this.string(node);
      case 'identifier':
        return { kind: 'identifier', at, name: node.text };
      case 'parenthesized_expression':
        return { kind: 'group', at, inner: this.expr(this.only(node)) };
      case 'array':
        return this.array(node);
      case 'object':
        return this.object(node);
      case 'member_expression':
      case 'subscript_expression':
        return this.postfix(node);
      case 'call_expression':
        return this.call(node);
      case 'unary_expression':
        return this.unary(node);
      case 'binary_expression':
        return this.binary(node);
      case 'ternary_expression':
        return this.ternary(node);
      case 'for_statement':
        return this.forExpr(node);
      case 'lambda_expression':
        return this.lambda(node);
      default:
        return this.unsupported(node);
    }
  }

  private only(node: Node): Node {
    const children = namedOf(node);
    return children.length === 1 && children[0] ? children[0] : this.unsupported(node);
  }

  private string(node: Node): Expr {
    const at = this.at(node);
    // A multi-line string has neither escapes nor interpolation, and drops the line break after its opening quotes.
    if (tokensOf(node)[0] === "'''")
      return { kind: 'string', at, parts: [node.text.slice(3, -3).replace(/^\r?\n/, '')] };
    const parts = namedOf(node).map((part): string | Expr => {
      if (part.type === 'string_content') return part.text;
      if (part.type === 'escape_sequence') return unescapeBicep(part.text) ?? this.unsupported(part, 'escape sequence');
      if (part.type === 'interpolation') return this.expr(this.only(part));
      return this.unsupported(part);
    });
    return { kind: 'string', at, parts };
  }

  object(node: Node): ObjectExpr {
    const properties = namedOf(node).map((property) => {
      const [key, value] = namedOf(property);
      if (property.type !== 'object_property' || !key || !value) return this.unsupported(property);
      if (key.type === 'string') return { key: this.string(key), value: this.expr(value) };
      if (key.type === 'identifier')
        return { key: { kind: 'string', at: this.at(key), parts: [key.text] } as Expr, value: this.expr(value) };
      return this.unsupported(key, 'object key');
    });
    return { kind: 'object', at: this.at(node), properties };
  }

  private postfix(node: Node): Expr {
    return attachPostfix(this.expr(this.field(node, 'object')), this.accessor(node));
  }

  /** The member access or indexing of a member_expression / subscript_expression, applied to a given object. */
  private accessor(node: Node): (object: Expr) => Expr {
    const at = this.at(node);
    const tokens = tokensOf(node);
    const safe = tokens.includes('.?') || tokens.includes('?');
    return node.type === 'member_expression'
      ? (object) => ({ kind: 'member', at, object, property: this.field(node, 'property').text, safe })
      : (object) => ({ kind: 'index', at, object, index: this.expr(this.field(node, 'index')), safe });
  }

  /**
   * Array items are separated by commas or line breaks. Inside an array literal tree-sitter-bicep reads `a[i]` as the
   * item `a` followed by the one-element array `[i]`; an item that starts on the line where the previous one ends,
   * without a comma between them, continues the previous item instead.
   */
  private array(node: Node): Expr {
    const items: Expr[] = [];
    let previous: Node | undefined;
    let separated = true;
    for (const child of node.children) {
      if (!child || isTrivia(child) || !child.isNamed) {
        if (child?.type === ',') separated = true;
        continue;
      }
      const last = items.at(-1);
      const continues = !separated && last && previous && previous.endPosition.row === child.startPosition.row;
      if (continues) items[items.length - 1] = this.continuation(child, last);
      else items.push(this.expr(child));
      previous = child;
      separated = false;
    }
    return { kind: 'array', at: this.at(node), items };
  }

  /**
   * `[i]`, `[i].x`, `[i] + 1`, ... read with their leading one-element array as an index applied to the previous item.
   * Both being operator expressions (`x + a[i] * 2`) would need the two trees merged by precedence: refused.
   */
  private continuation(node: Node, previous: Expr): Expr {
    const next = this.expr(node);
    const isOperator = (expr: Expr) => ['unary', 'binary', 'ternary'].includes(expr.kind);
    if (isOperator(previous) && isOperator(next)) return this.unsupported(node, 'array items without a separator');
    const indexed = (object: Expr): Expr =>
      replaceLeftmost(next, (leaf) => {
        const [index, extra] = leaf.kind === 'array' ? leaf.items : [];
        return index && !extra ? { kind: 'index', at: leaf.at, object, index, safe: false } : undefined;
      }) ?? this.unsupported(node, 'array items without a separator');
    return attachPostfix(previous, indexed);
  }

  call(node: Node): Expr {
    const at = this.at(node);
    const callee = this.field(node, 'function');
    const args = namedOf(this.field(node, 'arguments')).map((arg) => this.expr(arg));
    if (callee.type === 'identifier') return { kind: 'call', at, name: callee.text, args };
    // `sys.concat(...)`, `az.resourceGroup()`: a namespaced function. Resource methods (`vault.getSecret()`) are not.
    return attachPostfix(this.expr(callee), (inner) =>
      inner.kind === 'member' && inner.object.kind === 'identifier' && ['sys', 'az'].includes(inner.object.name)
        ? { kind: 'call', at, name: inner.property, args }
        : this.unsupported(node, 'method call'),
    );
  }

  private unary(node: Node): Expr {
    const operand = this.field(node, 'argument');
    // The grammar would put a binary or ternary operand under a unary operator; Bicep never does without parentheses.
    if (operand.type === 'binary_expression' || operand.type === 'ternary_expression') {
      this.unsupported(node, 'operator precedence (parenthesize the operand)');
    }
    const operator = tokensOf(node)[0] ?? this.unsupported(node);
    return { kind: 'unary', at: this.at(node), operator, operand: this.expr(operand) };
  }

  private operatorOf(node: Node): string | undefined {
    return tokensOf(node).find((token) => Object.hasOwn(PRECEDENCE, token));
  }

  private binary(node: Node): Expr {
    const operator = this.operatorOf(node) ?? this.unsupported(node, 'operator');
    const [left, right] = [this.field(node, 'left'), this.field(node, 'right')];
    // Refuse a tree whose nesting contradicts Bicep's precedence rather than evaluate it in the grammar's order.
    const precedenceOf = (child: Node): number =>
      child.type === 'binary_expression' ? (PRECEDENCE[this.operatorOf(child) ?? ''] ?? 0) : Infinity;
    const own = PRECEDENCE[operator] ?? 0;
    const associative = ['&&', '||', '??'].includes(operator);
    const rightPrecedence = precedenceOf(right);
    if (precedenceOf(left) < own || rightPrecedence < own || (rightPrecedence === own && !associative)) {
      this.unsupported(node, 'operator precedence (add parentheses)');
    }
    return { kind: 'binary', at: this.at(node), operator, left: this.expr(left), right: this.expr(right) };
  }

  private ternary(node: Node): Expr {
    return {
      kind: 'ternary',
      at: this.at(node),
      condition: this.expr(this.field(node, 'condition')),
      then: this.expr(this.field(node, 'consequence')),
      otherwise: this.expr(this.field(node, 'alternative')),
    };
  }

  forExpr(node: Node): ForExpr {
    const [head, source, last] = namedOf(node);
    const body = node.childForFieldName('body');
    if (!head || !source || !body || last?.id !== body.id) return this.unsupported(node, 'for expression');
    const variables = head.type === 'for_loop_parameters' ? namedOf(head) : [head];
    const item = variables[0]?.text ?? this.unsupported(head);
    const index = variables[1]?.text;
    const conditional = body.type === 'if_statement' ? this.ifStatement(body) : undefined;
    return {
      kind: 'for',
      at: this.at(node),
      item,
      index,
      source: this.expr(source),
      condition: conditional?.condition,
      body: conditional ? conditional.body : this.expr(body),
    };
  }

  private ifStatement(node: Node): { condition: Expr; body: ObjectExpr } {
    const [condition, body] = namedOf(node);
    if (!condition || body?.type !== 'object') return this.unsupported(node, 'if body');
    return { condition: this.expr(condition), body: this.object(body) };
  }

  private lambda(node: Node): Expr {
    const [head, body] = namedOf(node);
    if (!head || !body) return this.unsupported(node, 'lambda');
    const params = head.type === 'identifier' ? [head] : head.type === 'parenthesized_expression' ? namedOf(head) : [];
    if (params.length === 0 || params.some((param) => param.type !== 'identifier')) this.unsupported(head, 'lambda');
    return { kind: 'lambda', at: this.at(node), params: params.map((param) => param.text), body: this.expr(body) };
  }

  param(declaration: ParamDeclaration, types: TypeReader): ParamDecl {
    const typeNode = namedOf(declaration.node).find((child) => child.type === 'type');
    return {
      name: declaration.name,
      type: types.parameter(typeNode ?? this.unsupported(declaration.node, 'parameter type'), declaration.node),
      defaultValue: declaration.defaultValue ? this.expr(declaration.defaultValue) : undefined,
      decorators: this.decorators(declaration.node),
    };
  }

  private decorators(statement: Node): ReadonlyMap<string, readonly Expr[]> {
    let previous = statement.previousNamedSibling;
    while (previous && isTrivia(previous)) previous = previous.previousNamedSibling;
    const found = new Map<string, readonly Expr[]>();
    if (previous?.type !== 'decorators') return found;
    for (const decorator of namedOf(previous)) {
      const call = namedOf(decorator)[0];
      const converted = call?.type === 'call_expression' ? this.call(call) : undefined;
      if (converted?.kind !== 'call') return this.unsupported(decorator, 'decorator');
      found.set(converted.name, converted.args);
    }
    return found;
  }

  private declarationBody(statement: Node): DeclarationBody {
    const last = namedOf(statement).at(-1);
    if (last?.type === 'object') return { body: this.object(last) };
    if (last?.type === 'if_statement') return this.ifStatement(last);
    if (last?.type !== 'for_statement') return this.unsupported(statement, 'declaration body');
    const loop = this.forExpr(last);
    if (loop.body.kind !== 'object') return this.unsupported(last, 'loop body');
    return { loop, condition: loop.condition, body: loop.body };
  }

  resource(declaration: ResourceDeclaration): ResourceDecl {
    const [type, apiVersion, extra] = declaration.typeWithVersion.split('@');
    if (!type || !apiVersion || extra !== undefined) {
      return this.unsupported(declaration.node, `resource type '${declaration.typeWithVersion}'`);
    }
    return {
      kind: 'resource',
      symbol: declaration.name,
      type,
      apiVersion,
      existing: declaration.existing,
      order: declaration.node.startIndex,
      ...this.declarationBody(declaration.node),
    };
  }

  module(declaration: ModuleDeclaration, from: string): ModuleDecl {
    if (/^[a-z]+:/.test(declaration.path)) this.unsupported(declaration.node, 'registry or template-spec module');
    const body = this.declarationBody(declaration.node);
    if (body.loop) this.unsupported(declaration.node, 'module loop');
    if (propertyOf(body.body, 'scope')) this.unsupported(declaration.node, 'module scope');
    return {
      kind: 'module',
      symbol: declaration.name,
      path: resolve(dirname(from), declaration.path),
      order: declaration.node.startIndex,
      ...body,
    };
  }

  output(declaration: OutputDeclaration): OutputDecl {
    const type = declaration.type;
    if (!isPrimitiveType(type)) return this.unsupported(declaration.node, `output type '${type}'`);
    return { name: declaration.name, type, value: this.expr(declaration.value) };
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '\\n': '\n',
  '\\r': '\r',
  '\\t': '\t',
  "\\'": "'",
  '\\\\': '\\',
  '\\$': '$',
};

function unescapeBicep(sequence: string): string | undefined {
  const unicode = /^\\u\{([0-9a-fA-F]{1,6})\}$/.exec(sequence);
  return unicode?.[1] ? String.fromCodePoint(parseInt(unicode[1], 16)) : ESCAPES[sequence];
}

/** The value expression of a declaration property given by a plain key (`name`, `parent`, `params`). */
function propertyOf(object: ObjectExpr, key: string): Expr | undefined {
  return object.properties.find(
    ({ key: candidate }) => candidate.kind === 'string' && candidate.parts.length === 1 && candidate.parts[0] === key,
  )?.value;
}

function childrenOf(expr: Expr): readonly Expr[] {
  switch (expr.kind) {
    case 'literal':
    case 'identifier':
      return [];
    case 'string':
      return expr.parts.filter((part): part is Expr => typeof part !== 'string');
    case 'group':
      return [expr.inner];
    case 'member':
      return [expr.object];
    case 'index':
      return [expr.object, expr.index];
    case 'call':
      return expr.args;
    case 'unary':
      return [expr.operand];
    case 'binary':
      return [expr.left, expr.right];
    case 'ternary':
      return [expr.condition, expr.then, expr.otherwise];
    case 'array':
      return expr.items;
    case 'object':
      return expr.properties.flatMap(({ key, value }) => [key, value]);
    case 'for':
      return [expr.source, ...(expr.condition ? [expr.condition] : []), expr.body];
    case 'lambda':
      return [expr.body];
  }
}

function identifiersOf(expr: Expr): string[] {
  return expr.kind === 'identifier' ? [expr.name] : childrenOf(expr).flatMap(identifiersOf);
}

// ---------------------------------------------------------------------------------------------------------------------
// Deployment state: one Scope per template instance (main.bicep, each deployed module), its resources and modules.

interface Deployment {
  readonly context: DeploymentContext;
  readonly runtime: RuntimeLookup | undefined;
  readonly templates: ReadonlyMap<string, Template>;
}

interface Env {
  readonly scope: Scope;
  /** Loop variables and lambda parameters. */
  readonly locals: ReadonlyMap<string, unknown>;
}

/** A value computed once, on first use; a second request while it is being computed is a dependency cycle. */
class Lazy<T> {
  private state: 'pending' | 'busy' | 'done' = 'pending';
  private result: T | undefined;

  constructor(
    private readonly what: string,
    private readonly compute: () => T,
  ) {}

  get(): T {
    if (this.state === 'done') return this.result as T;
    if (this.state === 'busy') {
      throw new BicepDeploymentError(
        'InvalidTemplate',
        `Deployment template validation failed: 'Circular dependency on ${this.what}.'`,
      );
    }
    this.state = 'busy';
    try {
      this.result = this.compute();
      this.state = 'done';
      return this.result;
    } finally {
      if (this.state === 'busy') this.state = 'pending';
    }
  }
}

class Scope {
  readonly env: Env;
  private readonly params = new Map<string, Lazy<unknown>>();
  private readonly variables = new Map<string, Lazy<unknown>>();
  private readonly symbols = new Map<string, ResourceSymbol | ModuleInstance>();
  private readonly outputValues: Lazy<Record<string, unknown>>;

  constructor(
    readonly deployment: Deployment,
    readonly template: Template,
    readonly modulePath: readonly string[],
    private readonly given: { readonly name: string; readonly parameters: Readonly<Record<string, unknown>> },
  ) {
    this.env = { scope: this, locals: new Map() };
    for (const param of template.params) {
      this.params.set(param.name, new Lazy(`parameter '${param.name}'`, () => this.resolveParam(param)));
    }
    for (const [name, expr] of template.variables) {
      const site = `variable '${name}'`;
      this.variables.set(name, new Lazy(site, () => this.guard(site, () => evaluateRaw(expr, this.env))));
    }
    for (const declaration of template.declarations) {
      const symbol =
        declaration.kind === 'resource' ? new ResourceSymbol(this, declaration) : new ModuleInstance(this, declaration);
      this.symbols.set(declaration.symbol, symbol);
    }
    this.outputValues = new Lazy(`the outputs of ${template.display}`, () => this.evaluateOutputs());
  }

  /** deployment().name here. */
  get deploymentName(): string {
    return this.given.name;
  }

  /** What ARM checks before deploying: the parameters, then every variable that does not read a deployed resource. */
  validate(): void {
    const declared = this.template.params.map((param) => param.name);
    const unknown = Object.keys(this.given.parameters).filter((name) => !declared.includes(name));
    if (unknown.length > 0) {
      // ARM's wording: https://github.com/microsoft/dotnet-core-sample-templates/issues/2
      throw this.invalid(
        `The template parameters '${unknown.join(', ')}' in the parameters file are not valid; they are not present ` +
          `in the original template and can therefore not be provided at deployment time. The only supported ` +
          `parameters for this template are '${declared.join(', ')}'. ` +
          `Please see https://aka.ms/arm-deploy/#parameter-file for usage details.`,
      );
    }
    for (const name of declared) this.params.get(name)?.get();
    // ARM evaluates a template's variables up front (which is what lets main.bicep's fail() checks stop a deployment
    // whatever uses them); Bicep inlines the ones that read deployed state at their uses instead, so those stay lazy.
    for (const [name, expr] of this.template.variables) {
      if (!this.readsDeployedState(expr, new Set([name]))) this.variables.get(name)?.get();
    }
  }

  private readsDeployedState(expr: Expr, seen: Set<string>): boolean {
    return identifiersOf(expr).some((name) => {
      if (this.symbols.has(name)) return true;
      const variable = this.template.variables.get(name);
      if (!variable || seen.has(name)) return false;
      seen.add(name);
      return this.readsDeployedState(variable, seen);
    });
  }

  lookup(name: string, at: string): unknown {
    const param = this.params.get(name) ?? this.variables.get(name);
    if (param) return param.get();
    const symbol = this.symbols.get(name);
    if (symbol instanceof ResourceSymbol) return symbol.value();
    if (symbol) return symbol;
    throw new UnsupportedBicepError(`${at}: unknown symbol '${name}'`);
  }

  private resolveParam(param: ParamDecl): unknown {
    const given = this.given.parameters[param.name];
    const site = `parameter '${param.name}'`;
    const value =
      given !== undefined || !param.defaultValue
        ? given
        : this.guard(site, () => evaluate(param.defaultValue as Expr, this.env));
    // A parameter of a nullable type (`type?`) is optional: without a value it is null
    // (https://learn.microsoft.com/azure/azure-resource-manager/bicep/parameters#nullable-types).
    if (value === undefined && isNullable(param.type)) return null;
    if (value === undefined) {
      // ARM's wording: https://github.com/Azure/azure-quickstart-templates/pull/867
      throw this.invalid(
        `The value for the template parameter '${param.name}' is not provided. ` +
          `Please see https://aka.ms/arm-create-parameter-file for usage details.`,
      );
    }
    validateParameter(this, param, value);
    return value;
  }

  /** Turns fail() reached while evaluating `site` into the deployment error ARM reports. */
  guard<T>(site: string, compute: () => T): T {
    try {
      return compute();
    } catch (error) {
      if (error instanceof TemplateFailure) throw this.invalid(`The template ${site} is not valid: ${error.message}`);
      throw error;
    }
  }

  invalid(detail: string): BicepDeploymentError {
    const where = this.modulePath.length > 0 ? ` (module ${this.modulePath.join('/')}, ${this.template.display})` : '';
    return new BicepDeploymentError('InvalidTemplate', `Deployment template validation failed: '${detail}'${where}.`);
  }

  outputs(): Record<string, unknown> {
    return this.outputValues.get();
  }

  private evaluateOutputs(): Record<string, unknown> {
    const outputs: Record<string, unknown> = {};
    for (const output of this.template.outputs) {
      const value = this.guard(`output '${output.name}'`, () =>
        jsonValue(evaluate(output.value, this.env), output.value.at, false),
      );
      const actual = armTypeOf(value);
      if (actual !== ARM_TYPE_NAMES[output.type]) {
        throw this.invalid(
          `The template output '${output.name}' is not valid: expected a value of type ` +
            `'${ARM_TYPE_NAMES[output.type]}', got '${actual}'`,
        );
      }
      outputs[output.name] = value;
    }
    return outputs;
  }

  /** This template's deployed resources and those of its deployed modules, in declaration order. */
  resources(): EvaluatedResource[] {
    return this.template.declarations.flatMap((declaration) => {
      const symbol = this.symbols.get(declaration.symbol);
      if (symbol instanceof ResourceSymbol) {
        return symbol
          .instances()
          .filter((instance) => instance.deployed())
          .map((instance) => instance.evaluated());
      }
      if (!symbol?.deployed()) return [];
      const child = symbol.child();
      const resources = child.resources();
      child.outputs();
      return resources;
    });
  }
}

class ResourceSymbol {
  private readonly all: Lazy<readonly ResourceInstance[]>;

  constructor(
    private readonly scope: Scope,
    private readonly decl: ResourceDecl,
  ) {
    this.all = new Lazy(`resource '${decl.symbol}'`, () => this.expand());
  }

  instances(): readonly ResourceInstance[] {
    return this.all.get();
  }

  /** What the symbol evaluates to: the instance, or the array of a loop's instances. */
  value(): unknown {
    return this.decl.loop ? this.instances() : this.instances()[0];
  }

  private expand(): ResourceInstance[] {
    const loop = this.decl.loop;
    if (!loop) return [new ResourceInstance(this.scope, this.decl, this.scope.env.locals, this.decl.condition)];
    return this.scope
      .guard(`resource '${this.decl.symbol}'`, () => loopEnvs(loop, this.scope.env))
      .map((env) => new ResourceInstance(this.scope, this.decl, env.locals, loop.condition));
  }
}

const NOT_IN_BODY = new Set(['name', 'parent', 'scope', 'dependsOn']);

class ResourceInstance {
  private readonly env: Env;
  private readonly site: string;
  private readonly condition: Lazy<boolean>;
  private readonly ownName: Lazy<string>;
  private readonly body: Lazy<Record<string, unknown>>;

  constructor(
    private readonly scope: Scope,
    readonly decl: ResourceDecl,
    locals: ReadonlyMap<string, unknown>,
    condition: Expr | undefined,
  ) {
    this.env = { scope, locals };
    this.site = `resource '${decl.symbol}'`;
    const guarded =
      <T>(compute: () => T) =>
      () =>
        scope.guard(this.site, compute);
    this.condition = new Lazy(
      this.site,
      guarded(() => !condition || asBool(evaluate(condition, this.env), condition.at)),
    );
    this.ownName = new Lazy(
      this.site,
      guarded(() => this.evaluateName()),
    );
    this.body = new Lazy(
      this.site,
      guarded(() => this.evaluateBody()),
    );
  }

  deployed(): boolean {
    return this.condition.get();
  }

  /** The declared name (what `symbol.name` reads): without the parent's name for a child declared with `parent:`. */
  name(): string {
    return this.ownName.get();
  }

  fullName(): string {
    const parent = this.related('parent');
    return parent ? `${parent.fullName()}/${this.name()}` : this.name();
  }

  id(): string {
    const parent = this.related('parent');
    const childType = this.decl.type.split('/').at(-1);
    if (parent) return `${parent.id()}/${childType}/${this.name()}`;
    const context = this.scope.deployment.context;
    const base =
      this.related('scope')?.id() ?? `/subscriptions/${context.subscriptionId}/resourceGroups/${context.resourceGroup}`;
    return `${base}/${providerPath(this.decl.type, this.name().split('/'), this.decl.body.at)}`;
  }

  /** `parent:` or `scope:`, which must name a resource. */
  private related(key: 'parent' | 'scope'): ResourceInstance | undefined {
    const expr = propertyOf(this.decl.body, key);
    if (!expr) return undefined;
    const value = evaluateRaw(expr, this.env);
    if (value instanceof ResourceInstance) return value;
    throw new UnsupportedBicepError(`${expr.at}: ${key} must name a resource (${describe(value)} is not supported)`);
  }

  member(property: string, at: string): unknown {
    switch (property) {
      case 'id':
        return this.id();
      case 'name':
        return this.name();
      case 'type':
        return this.decl.type;
      case 'apiVersion':
        return this.decl.apiVersion;
      default:
        return new RuntimeProperty(this, [property], at);
    }
  }

  evaluated(): EvaluatedResource {
    const scope = this.related('scope');
    return {
      symbolicName: this.decl.symbol,
      modulePath: this.scope.modulePath,
      type: this.decl.type,
      apiVersion: this.decl.apiVersion,
      name: this.fullName(),
      id: this.id(),
      existing: this.decl.existing,
      ...(scope ? { scope: scope.id() } : {}),
      body: this.body.get(),
    };
  }

  /** A property ARM reads with reference(): the runtime's answer, else the declared value, else a placeholder. */
  runtimeValue(path: readonly string[], at: string): unknown {
    if (!this.deployed()) {
      throw this.scope.invalid(
        `The resource '${this.decl.symbol}' is not deployed (its condition is false), so ` +
          `'${[this.decl.symbol, ...path].join('.')}' (${at}) has no value`,
      );
    }
    const resource = this.evaluated();
    const known = this.scope.deployment.runtime?.(resource, path);
    if (known !== undefined) return known;
    const declared = lookupPath(resource.body, path);
    return declared !== undefined ? declared : (subResourceId(resource, path) ?? runtimePlaceholder(resource.id, path));
  }

  private evaluateName(): string {
    const expr = propertyOf(this.decl.body, 'name');
    if (!expr) throw new UnsupportedBicepError(`${this.decl.body.at}: resource '${this.decl.symbol}' has no name`);
    return asString(evaluate(expr, this.env), expr.at);
  }

  private evaluateBody(): Record<string, unknown> {
    const body: Record<string, unknown> = {};
    for (const { key, value } of this.decl.body.properties) {
      const name = asString(evaluate(key, this.env), key.at);
      if (NOT_IN_BODY.has(name)) continue;
      const evaluated = jsonValue(evaluate(value, this.env), value.at, true);
      if (evaluated !== null) body[name] = evaluated;
    }
    return body;
  }
}

/** `resource.properties.x[0].y`, resolved when the value is used (so that the whole path reaches the runtime). */
class RuntimeProperty {
  constructor(
    private readonly resource: ResourceInstance,
    private readonly path: readonly string[],
    private readonly at: string,
  ) {}

  extend(segment: string): RuntimeProperty {
    return new RuntimeProperty(this.resource, [...this.path, segment], this.at);
  }

  resolve(): unknown {
    return this.resource.runtimeValue(this.path, this.at);
  }
}

class ModuleInstance {
  private readonly site: string;
  private readonly condition: Lazy<boolean>;
  private readonly scope: Lazy<Scope>;

  constructor(
    private readonly parent: Scope,
    private readonly decl: ModuleDecl,
  ) {
    this.site = `resource '${decl.symbol}'`;
    const condition = decl.condition;
    this.condition = new Lazy(this.site, () =>
      parent.guard(this.site, () => !condition || asBool(evaluate(condition, parent.env), condition.at)),
    );
    this.scope = new Lazy(this.site, () => this.deploy());
  }

  deployed(): boolean {
    return this.condition.get();
  }

  /** The module's deployment: created (its parameters validated) on first use. */
  child(): Scope {
    if (!this.deployed()) {
      throw this.parent.invalid(
        `The module '${this.decl.symbol}' is not deployed (its condition is false): it has no outputs`,
      );
    }
    return this.scope.get();
  }

  member(property: string, at: string): unknown {
    if (property === 'outputs') return this.child().outputs();
    if (property === 'name') return this.child().deploymentName;
    throw new UnsupportedBicepError(`${at}: module property '${property}'`);
  }

  private deploy(): Scope {
    const { name, parameters } = this.parent.guard(this.site, () => {
      const nameExpr = propertyOf(this.decl.body, 'name');
      if (!nameExpr) throw new UnsupportedBicepError(`${this.decl.body.at}: module '${this.decl.symbol}' has no name`);
      const paramsExpr = propertyOf(this.decl.body, 'params');
      const params = paramsExpr ? evaluate(paramsExpr, this.parent.env) : {};
      if (!isRecord(params)) throw new UnsupportedBicepError(`${this.decl.body.at}: module params must be an object`);
      return { name: asString(evaluate(nameExpr, this.parent.env), nameExpr.at), parameters: params };
    });
    const template = templateAt(this.parent.deployment.templates, this.decl.path);
    const child = new Scope(this.parent.deployment, template, [...this.parent.modulePath, this.decl.symbol], {
      name,
      parameters,
    });
    child.validate();
    return child;
  }
}

/** A lambda's value: called by filter() and map() with (item, index). */
class Lambda {
  constructor(
    private readonly expr: LambdaExpr,
    private readonly env: Env,
  ) {}

  call(args: readonly unknown[]): unknown {
    const locals = new Map(this.env.locals);
    this.expr.params.forEach((name, index) => locals.set(name, args[index]));
    return evaluate(this.expr.body, { scope: this.env.scope, locals });
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Expressions.

function evaluate(expr: Expr, env: Env): unknown {
  const value = evaluateRaw(expr, env);
  return value instanceof RuntimeProperty ? value.resolve() : value;
}

/** Like evaluate, but a resource property read stays a RuntimeProperty, so that a member access can extend it. */
function evaluateRaw(expr: Expr, env: Env): unknown {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'string':
      return expr.parts
        .map((part) => (typeof part === 'string' ? part : interpolate(evaluate(part, env), part.at)))
        .join('');
    case 'identifier':
      return env.locals.has(expr.name) ? env.locals.get(expr.name) : env.scope.lookup(expr.name, expr.at);
    case 'group':
      return evaluateRaw(expr.inner, env);
    case 'member':
      return memberOf(evaluateRaw(expr.object, env), expr.property, expr.safe, expr.at);
    case 'index':
      return indexOf(evaluateRaw(expr.object, env), evaluate(expr.index, env), expr.safe, expr.at);
    case 'call':
      return callFunction(expr, env);
    case 'unary':
      return unary(expr.operator, evaluate(expr.operand, env), expr.at);
    case 'binary':
      return binary(expr, env);
    case 'ternary':
      // ARM's if() evaluates only the branch it takes, which is what lets fail() stand in one.
      return evaluateRaw(asBool(evaluate(expr.condition, env), expr.at) ? expr.then : expr.otherwise, env);
    case 'array':
      return expr.items.map((item) => evaluate(item, env));
    case 'object':
      return objectValue(expr, env);
    case 'for':
      return loopEnvs(expr, env)
        .filter((item) => !expr.condition || asBool(evaluate(expr.condition, item), expr.at))
        .map((item) => evaluate(expr.body, item));
    case 'lambda':
      return new Lambda(expr, env);
  }
}

function objectValue(expr: ObjectExpr, env: Env): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const { key, value } of expr.properties) result[asString(evaluate(key, env), key.at)] = evaluate(value, env);
  return result;
}

/** One environment per element of a `for` source, with the item (and index) variables set. */
function loopEnvs(loop: ForExpr, env: Env): Env[] {
  return asArray(evaluate(loop.source, env), loop.source.at).map((item, index) => {
    const locals = new Map(env.locals).set(loop.item, item);
    if (loop.index !== undefined) locals.set(loop.index, index);
    return { scope: env.scope, locals };
  });
}

function memberOf(target: unknown, property: string, safe: boolean, at: string): unknown {
  if (target instanceof RuntimeProperty) return target.extend(property);
  if (target instanceof ResourceInstance || target instanceof ModuleInstance) return target.member(property, at);
  if (target === null && safe) return null;
  if (!isRecord(target)) throw templateError(at, `cannot read property '${property}' of ${describe(target)}`);
  // ARM's property names are case-insensitive.
  const key = Object.keys(target).find((candidate) => candidate.toLowerCase() === property.toLowerCase());
  if (key !== undefined) return target[key];
  if (safe) return null;
  throw templateError(
    at,
    `The language expression property '${property}' doesn't exist, available properties are ` +
      `'${Object.keys(target).join(', ')}'.`,
  );
}

function indexOf(target: unknown, index: unknown, safe: boolean, at: string): unknown {
  if (target instanceof RuntimeProperty) return target.extend(String(index));
  if (typeof index === 'string') return memberOf(target, index, safe, at);
  if (target === null && safe) return null;
  if (!Array.isArray(target) || typeof index !== 'number') {
    throw templateError(at, `cannot index ${describe(target)} with ${describe(index)}`);
  }
  if (Number.isInteger(index) && index >= 0 && index < target.length) return target[index];
  if (safe) return null;
  throw templateError(at, `The language expression property array index '${index}' is out of bounds.`);
}

function unary(operator: string, operand: unknown, at: string): unknown {
  if (operator === '!') return !asBool(operand, at);
  if (operator === '-') return -asInt(operand, at);
  throw new UnsupportedBicepError(`${at}: unsupported unary operator ${operator}`);
}

function binary(expr: Extract<Expr, { kind: 'binary' }>, env: Env): unknown {
  const { operator, at } = expr;
  const left = evaluate(expr.left, env);
  // && || ?? short-circuit, as the compiled and()/or()/coalesce() do for the right-hand side here.
  if (operator === '&&') return asBool(left, at) && asBool(evaluate(expr.right, env), at);
  if (operator === '||') return asBool(left, at) || asBool(evaluate(expr.right, env), at);
  if (operator === '??') return left ?? evaluate(expr.right, env);
  const right = evaluate(expr.right, env);
  switch (operator) {
    case '==':
      return deepEqual(left, right);
    case '!=':
      return !deepEqual(left, right);
    case '=~':
      return asString(left, at).toLowerCase() === asString(right, at).toLowerCase();
    case '!~':
      return asString(left, at).toLowerCase() !== asString(right, at).toLowerCase();
    case '<':
    case '<=':
    case '>':
    case '>=':
      return compare(operator, left, right, at);
    default:
      return arithmetic(operator, asInt(left, at), asInt(right, at), at);
  }
}

function compare(operator: string, left: unknown, right: unknown, at: string): boolean {
  const bothInts = typeof left === 'number' && typeof right === 'number';
  if (!bothInts && !(typeof left === 'string' && typeof right === 'string')) {
    throw templateError(at, `cannot compare ${describe(left)} with ${describe(right)}`);
  }
  const [a, b] = [left as number | string, right as number | string];
  return operator === '<' ? a < b : operator === '<=' ? a <= b : operator === '>' ? a > b : a >= b;
}

function arithmetic(operator: string, left: number, right: number, at: string): number {
  if ((operator === '/' || operator === '%') && right === 0) throw templateError(at, 'division by zero');
  switch (operator) {
    case '+':
      return left + right;
    case '-':
      return left - right;
    case '*':
      return left * right;
    case '/':
      return Math.trunc(left / right);
    case '%':
      return left % right;
    default:
      throw new UnsupportedBicepError(`${at}: unsupported operator ${operator}`);
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Functions.

interface CallSite {
  readonly at: string;
  readonly env: Env;
}
interface BicepFunction {
  readonly min: number;
  readonly max: number;
  readonly apply: (args: readonly unknown[], site: CallSite) => unknown;
}
const fn = (min: number, max: number, apply: BicepFunction['apply']): BicepFunction => ({ min, max, apply });
const ANY = Infinity;

function callFunction(expr: CallExpr, env: Env): unknown {
  const definition = Object.hasOwn(FUNCTIONS, expr.name) ? FUNCTIONS[expr.name] : undefined;
  if (!definition) throw new UnsupportedBicepError(`${expr.at}: unsupported function ${expr.name}()`);
  if (expr.args.length < definition.min || expr.args.length > definition.max) {
    throw templateError(expr.at, `${expr.name}() does not take ${expr.args.length} argument(s)`);
  }
  return definition.apply(
    expr.args.map((arg) => evaluate(arg, env)),
    { at: expr.at, env },
  );
}

const caseInsensitive = (value: unknown, at: string): string => asString(value, at).toLowerCase();

const STRING_FUNCTIONS: Readonly<Record<string, BicepFunction>> = {
  base64: fn(1, 1, ([text], { at }) => Buffer.from(asString(text, at), 'utf8').toString('base64')),
  // ARM's startsWith/endsWith compare case-insensitively, contains and replace case-sensitively.
  endsWith: fn(2, 2, ([text, end], { at }) => caseInsensitive(text, at).endsWith(caseInsensitive(end, at))),
  startsWith: fn(2, 2, ([text, start], { at }) => caseInsensitive(text, at).startsWith(caseInsensitive(start, at))),
  replace: fn(3, 3, ([text, old, replacement], { at }) => {
    const search = asString(old, at);
    if (search === '') throw templateError(at, 'replace() cannot replace an empty string');
    return asString(text, at).split(search).join(asString(replacement, at));
  }),
  split: fn(2, 2, ([text, delimiters], { at }) => {
    const list = Array.isArray(delimiters) ? delimiters.map((item) => asString(item, at)) : [asString(delimiters, at)];
    return asString(text, at).split(
      new RegExp(list.map((item) => item.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')),
    );
  }),
  string: fn(1, 1, ([value], { at }) => interpolate(value, at)),
  toLower: fn(1, 1, ([text], { at }) => asString(text, at).toLowerCase()),
  toUpper: fn(1, 1, ([text], { at }) => asString(text, at).toUpperCase()),
  trim: fn(1, 1, ([text], { at }) => asString(text, at).trim()),
  int: fn(1, 1, ([value], { at }) => toInt(value, at)),
  cidrHost: fn(2, 2, ([network, host], { at }) => cidrHost(asString(network, at), asInt(host, at), at)),
  fail: fn(1, 1, ([message], { at }) => {
    // fail() stops the deployment with its message; it may only stand where evaluation short-circuits (?:, ??):
    // https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-flow-control
    throw new TemplateFailure(asString(message, at));
  }),
};

const COLLECTION_FUNCTIONS: Readonly<Record<string, BicepFunction>> = {
  concat: fn(1, ANY, (args, { at }) =>
    args.every(Array.isArray) ? args.flat(1) : args.map((arg) => asString(arg, at)).join(''),
  ),
  contains: fn(2, 2, ([container, item], { at }) => contains(container, item, at)),
  empty: fn(1, 1, ([value], { at }) => value === null || lengthOf(value, at) === 0),
  length: fn(1, 1, ([value], { at }) => lengthOf(value, at)),
  first: fn(1, 1, ([value], { at }) => endOf(value, 0, at)),
  last: fn(1, 1, ([value], { at }) => endOf(value, -1, at)),
  join: fn(2, 2, ([items, delimiter], { at }) =>
    asArray(items, at)
      .map((item) => interpolate(item, at))
      .join(asString(delimiter, at)),
  ),
  range: fn(2, 2, ([start, count], { at }) => {
    const [first, length] = [asInt(start, at), asInt(count, at)];
    if (length < 0) throw templateError(at, `range() count ${length} is negative`);
    return Array.from({ length }, (_, index) => first + index);
  }),
  filter: fn(2, 2, ([items, predicate], { at }) =>
    asArray(items, at).filter((item, index) => asBool(asLambda(predicate, at).call([item, index]), at)),
  ),
  map: fn(2, 2, ([items, mapper], { at }) =>
    asArray(items, at).map((item, index) => asLambda(mapper, at).call([item, index])),
  ),
  coalesce: fn(1, ANY, (args) => args.find((arg) => arg !== null) ?? null),
};

const DEPLOYMENT_FUNCTIONS: Readonly<Record<string, BicepFunction>> = {
  resourceGroup: fn(0, 0, (_, { env }) => {
    const { subscriptionId, resourceGroup, location } = env.scope.deployment.context;
    const id = `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}`;
    return { id, name: resourceGroup, type: 'Microsoft.Resources/resourceGroups', location, properties: {} };
  }),
  subscription: fn(0, 0, (_, { env }) => {
    const { subscriptionId, tenantId } = env.scope.deployment.context;
    return { id: `/subscriptions/${subscriptionId}`, subscriptionId, tenantId };
  }),
  deployment: fn(0, 0, (_, { env }) => ({ name: env.scope.deploymentName })),
  resourceId: fn(2, ANY, (args, site) => resourceIdFunction(args, site, false)),
  subscriptionResourceId: fn(2, ANY, (args, site) => resourceIdFunction(args, site, true)),
  guid: fn(1, ANY, (args, { at }) => uuidV5(GUID_NAMESPACE, args.map((arg) => asString(arg, at)).join('-'))),
  uniqueString: fn(1, ANY, (args, { at }) => uniqueString(args.map((arg) => asString(arg, at)))),
  newGuid: fn(0, 0, () => randomUUID()),
  loadTextContent: fn(1, 2, ([path, encoding], site) => {
    if (encoding !== undefined && caseInsensitive(encoding, site.at) !== 'utf-8') {
      throw new UnsupportedBicepError(`${site.at}: loadTextContent encoding ${String(encoding)}`);
    }
    return readFileSync(templateRelative(path, site), 'utf8');
  }),
  loadFileAsBase64: fn(1, 1, ([path], site) => readFileSync(templateRelative(path, site)).toString('base64')),
};

const FUNCTIONS: Readonly<Record<string, BicepFunction>> = {
  ...STRING_FUNCTIONS,
  ...COLLECTION_FUNCTIONS,
  ...DEPLOYMENT_FUNCTIONS,
};

function templateRelative(path: unknown, site: CallSite): string {
  return resolve(dirname(site.env.scope.template.path), asString(path, site.at));
}

function contains(container: unknown, item: unknown, at: string): boolean {
  if (typeof container === 'string') return container.includes(asString(item, at));
  if (Array.isArray(container)) return container.some((candidate) => deepEqual(candidate, item));
  if (isRecord(container)) return Object.keys(container).some((key) => key.toLowerCase() === caseInsensitive(item, at));
  throw templateError(at, `contains() cannot search ${describe(container)}`);
}

function lengthOf(value: unknown, at: string): number {
  if (typeof value === 'string' || Array.isArray(value)) return value.length;
  if (isRecord(value)) return Object.keys(value).length;
  throw templateError(at, `${describe(value)} has no length`);
}

function endOf(value: unknown, index: 0 | -1, at: string): unknown {
  if (typeof value !== 'string' && !Array.isArray(value)) throw templateError(at, `${describe(value)} has no elements`);
  if (value.length === 0) throw new UnsupportedBicepError(`${at}: first()/last() of an empty ${describe(value)}`);
  return value.at(index);
}

function toInt(value: unknown, at: string): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\s*[+-]?\d+\s*$/.test(value)) return parseInt(value, 10);
  throw templateError(at, `int() cannot convert ${describe(value)} '${String(value)}' to an integer`);
}

/** resourceId([subscriptionId], [resourceGroupName], type, names...), subscriptionResourceId([subscriptionId], ...). */
function resourceIdFunction(args: readonly unknown[], site: CallSite, subscriptionLevel: boolean): string {
  const strings = args.map((arg) => asString(arg, site.at));
  const typeIndex = strings.findIndex((arg) => arg.includes('/'));
  const type = strings[typeIndex];
  const prefix = strings.slice(0, Math.max(typeIndex, 0));
  if (type === undefined || prefix.length > (subscriptionLevel ? 1 : 2)) {
    throw templateError(site.at, `resourceId(${strings.join(', ')}) names no resource type`);
  }
  const context = site.env.scope.deployment.context;
  const path = providerPath(type, strings.slice(typeIndex + 1), site.at);
  if (subscriptionLevel) return `/subscriptions/${prefix[0] ?? context.subscriptionId}/${path}`;
  const [subscription, group] =
    prefix.length === 2 ? prefix : [context.subscriptionId, prefix[0] ?? context.resourceGroup];
  return `/subscriptions/${subscription}/resourceGroups/${group}/${path}`;
}

/** `providers/Ns/t1/n1/t2/n2` for type 'Ns/t1/t2' and names [n1, n2], as ARM forms ids. */
function providerPath(type: string, names: readonly string[], at: string): string {
  const [namespace, ...types] = type.split('/');
  if (!namespace || types.length === 0 || types.length !== names.length) {
    throw templateError(
      at,
      `The template resource '${names.join('/')}' for type '${type}' has incorrect segment lengths.`,
    );
  }
  return `providers/${namespace}/${types.map((segment, index) => `${segment}/${names[index]}`).join('/')}`;
}

/**
 * ARM's guid() is a name-based (version 5, SHA-1) UUID of its arguments joined with '-', in the namespace below (the
 * one ARM is reported to use). Only determinism matters to the twin: equality with ARM's bytes is neither tested nor
 * needed.
 */
const GUID_NAMESPACE = '11fb06fb-712d-4ddd-98c7-e71bbd588830';
/** The namespace of the GUIDs that stand in for unknown runtime ids (RFC 4122's URL namespace). */
const RUNTIME_NAMESPACE = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';

function uuidV5(namespace: string, name: string): string {
  const hash = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  hash.writeUInt8((hash.readUInt8(6) & 0x0f) | 0x50, 6);
  hash.writeUInt8((hash.readUInt8(8) & 0x3f) | 0x80, 8);
  const hex = hash.subarray(0, 16).toString('hex');
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20, 32)].join('-');
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/**
 * 13 lower-case base-32 characters, deterministic in the arguments like ARM's uniqueString(). ARM hashes with its own
 * (MurmurHash64-based) algorithm; this one is SHA-256, so the values differ from ARM's, which the twin does not need.
 */
function uniqueString(parts: readonly string[]): string {
  const bits = [...createHash('sha256').update(parts.join('-'), 'utf8').digest()]
    .map((byte) => byte.toString(2).padStart(8, '0'))
    .join('');
  return Array.from({ length: 13 }, (_, index) =>
    BASE32.charAt(parseInt(bits.slice(index * 5, index * 5 + 5), 2)),
  ).join('');
}

/**
 * Bicep's cidrHost counts usable hosts: host index 0 is the address after the network address ('10.144.3.0/24' →
 * '10.144.3.1'), and the broadcast address is never returned
 * (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-cidr#cidrhost). IPv4 only here.
 */
function cidrHost(network: string, hostIndex: number, at: string): string {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(network);
  if (!match) throw new UnsupportedBicepError(`${at}: cidrHost('${network}'): only IPv4 ranges are supported`);
  const octets = match.slice(1, 5).map(Number);
  const prefixLength = Number(match[5]);
  if (octets.some((octet) => octet > 255) || prefixLength > 32)
    throw templateError(at, `'${network}' is not a CIDR range`);
  const size = 2 ** (32 - prefixLength);
  const address = octets.reduce((sum, octet) => sum * 256 + octet, 0);
  const host = address - (address % size) + 1 + hostIndex;
  if (hostIndex < 0 || host >= address - (address % size) + size - 1) {
    throw templateError(at, `cidrHost('${network}', ${hostIndex}): the range has no usable host ${hostIndex}`);
  }
  return [24, 16, 8, 0].map((shift) => Math.floor(host / 2 ** shift) % 256).join('.');
}

// ---------------------------------------------------------------------------------------------------------------------
// Runtime values.

function lookupPath(root: unknown, path: readonly string[]): unknown {
  let current = root;
  for (const segment of path) {
    if (Array.isArray(current)) current = current[Number(segment)];
    else if (isRecord(current)) current = current[segment];
    else return undefined;
  }
  return current;
}

/** A named sub-resource's id (a subnet, a load balancer frontend) as ARM forms it: parent id, collection, name. */
function subResourceId(resource: EvaluatedResource, path: readonly string[]): string | undefined {
  const [collection, position, last] = path.slice(-3);
  if (last !== 'id' || collection === undefined || !/^\d+$/.test(position ?? '')) return undefined;
  const element = lookupPath(resource.body, path.slice(0, -1));
  return isRecord(element) && typeof element.name === 'string'
    ? `${resource.id}/${collection}/${element.name}`
    : undefined;
}

/**
 * What stands in for a runtime value nobody supplied: for an id-like property (…Id: principalId, clientId, tenantId)
 * a GUID derived from the resource id and the property path, so that equal reads agree (a role assignment's
 * principalId equals what the identity's principalId reads elsewhere); anything else reads
 * `<runtime:RESOURCE_ID.path.to.property>`.
 */
export function runtimePlaceholder(resourceId: string, path: readonly string[]): string {
  return /Id$/.test(path.at(-1) ?? '')
    ? uuidV5(RUNTIME_NAMESPACE, `${resourceId}#${path.join('.')}`)
    : `<runtime:${resourceId}.${path.join('.')}>`;
}

// ---------------------------------------------------------------------------------------------------------------------
// Parameters and values.

/**
 * ARM's checks of a parameter value. The wording follows ARM's messages: "The provided value for the template
 * parameter 'x' ... is not valid. The parameter value is not part of the allowed value(s)" (documented at
 * https://learn.microsoft.com/azure/azure-resource-manager/troubleshooting/error-invalid-template) and "Length of the
 * value should be greater than or equal to '12'" (https://github.com/microsoft/vscode-azurearmtools/issues/1350); the
 * type and min/max value messages are modelled on them, and so are those of a user-defined type (bicep-types.ts
 * typeProblem), which name where in the value it departs from the type. A @secure() parameter's value is never
 * repeated.
 */
function validateParameter(scope: Scope, param: ParamDecl, value: unknown): void {
  const shown = param.decorators.has('secure') ? '' : ` '${typeof value === 'string' ? value : JSON.stringify(value)}'`;
  const refuse = (reason: string): never => {
    throw scope.invalid(
      `The provided value${shown} for the template parameter '${param.name}' is not valid. ${reason}`,
    );
  };
  // The declared type first: a primitive type's message as before; a user-defined type's names where the value
  // departs from it (bicep-types.ts typeProblem).
  const problem = typeProblem(param.type, value);
  if (problem) refuse(problem);
  if (value === null) return;
  const decorator = (name: string): unknown => {
    const arg = param.decorators.get(name)?.[0];
    return arg ? evaluate(arg, scope.env) : undefined;
  };
  const allowed = decorator('allowed');
  if (allowed !== undefined && !asArray(allowed, param.name).some((candidate) => deepEqual(candidate, value))) {
    const list = asArray(allowed, param.name).map((candidate) => interpolate(candidate, param.name));
    refuse(`The parameter value is not part of the allowed value(s): '${list.join(',')}'.`);
  }
  const bound = (name: string): number | undefined => {
    const limit = decorator(name);
    return limit === undefined ? undefined : asInt(limit, param.name);
  };
  const [minValue, maxValue, minLength, maxLength] = ['minValue', 'maxValue', 'minLength', 'maxLength'].map(bound);
  const length = typeof value === 'string' || Array.isArray(value) ? value.length : undefined;
  if (typeof value === 'number' && minValue !== undefined && value < minValue) {
    refuse(`The value should be greater than or equal to '${minValue}'.`);
  }
  if (typeof value === 'number' && maxValue !== undefined && value > maxValue) {
    refuse(`The value should be less than or equal to '${maxValue}'.`);
  }
  if (length !== undefined && minLength !== undefined && length < minLength) {
    refuse(`Length of the value should be greater than or equal to '${minLength}'.`);
  }
  if (length !== undefined && maxLength !== undefined && length > maxLength) {
    refuse(`Length of the value should be less than or equal to '${maxLength}'.`);
  }
}

function describe(value: unknown): string {
  if (value instanceof ResourceInstance) return `resource '${value.decl.symbol}'`;
  if (value instanceof ModuleInstance) return 'a module';
  if (value instanceof Lambda) return 'a lambda';
  return armTypeOf(value).toLowerCase();
}

function templateError(at: string, detail: string): BicepDeploymentError {
  return new BicepDeploymentError('InvalidTemplate', `Deployment template validation failed: '${detail}' (${at}).`);
}

function typeError(expected: string, value: unknown, at: string): never {
  throw templateError(at, `expected ${expected}, got ${describe(value)}`);
}

function asString(value: unknown, at: string): string {
  return typeof value === 'string' ? value : typeError('a string', value, at);
}

function asInt(value: unknown, at: string): number {
  return typeof value === 'number' && Number.isInteger(value) ? value : typeError('an int', value, at);
}

function asBool(value: unknown, at: string): boolean {
  return typeof value === 'boolean' ? value : typeError('a bool', value, at);
}

function asArray(value: unknown, at: string): unknown[] {
  return Array.isArray(value) ? value : typeError('an array', value, at);
}

function asLambda(value: unknown, at: string): Lambda {
  return value instanceof Lambda ? value : typeError('a lambda', value, at);
}

/**
 * A value inside a string (interpolation, string(), join()). ARM renders a bool as 'True'/'False' and null as '',
 * which no template here needs: both are refused rather than guessed.
 */
function interpolate(value: unknown, at: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value) || isRecord(value)) return JSON.stringify(jsonValue(value, at, false));
  throw new UnsupportedBicepError(`${at}: ${describe(value)} in a string`);
}

/** A plain JSON value (a resource or a lambda is no property value); object properties set to null dropped if asked. */
function jsonValue(value: unknown, at: string, dropNulls: boolean): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (Array.isArray(value)) return value.map((item) => jsonValue(item, at, dropNulls));
  if (!isRecord(value)) throw new UnsupportedBicepError(`${at}: ${describe(value)} as a property value`);
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, item]) => !(dropNulls && item === null))
      .map(([key, item]) => [key, jsonValue(item, at, dropNulls)]),
  );
}
