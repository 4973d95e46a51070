import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { Language, Parser } from 'web-tree-sitter';
import type { Node, Tree } from 'web-tree-sitter';

/**
 * Reads Bicep files through the tree-sitter Bicep grammar (there is no Bicep compiler on this machine)
 * and exposes what the structural tests need: declarations with their decorators, literal values of
 * resource bodies, the identifiers an expression depends on, and a small evaluator for the string
 * functions the templates use to build cloud-init customData.
 */

export const BICEP_DIR = resolve(__dirname, '../../bicep');

let parserPromise: Promise<Parser> | undefined;

export function bicepParser(): Promise<Parser> {
  parserPromise ??= (async () => {
    await Parser.init();
    // Bytes, not a path: with a path the library reads the file through a dynamic import, which jest's CommonJS runtime
    // refuses.
    const language = await Language.load(readFileSync(require.resolve('tree-sitter-bicep/tree-sitter-bicep.wasm')));
    const parser = new Parser();
    parser.setLanguage(language);
    return parser;
  })();
  return parserPromise;
}

export function listFiles(extension: string, dir = BICEP_DIR): string[] {
  return readdirSync(dir)
    .flatMap((entry) => {
      const path = join(dir, entry);
      return statSync(path).isDirectory() ? listFiles(extension, path) : path.endsWith(extension) ? [path] : [];
    })
    .sort();
}

export function relativeToBicep(path: string): string {
  return relative(BICEP_DIR, path);
}

/** ERROR and MISSING nodes, as "line:column type text" strings (1-based lines). */
export function syntaxErrors(tree: Tree): string[] {
  const found: string[] = [];
  const visit = (node: Node): void => {
    if (node.isError || node.isMissing) {
      found.push(
        `${node.startPosition.row + 1}:${node.startPosition.column + 1} ` +
          `${node.isMissing ? 'MISSING' : 'ERROR'} ${JSON.stringify(node.text.slice(0, 60))}`,
      );
    }
    for (const child of node.children) if (child) visit(child);
  };
  visit(tree.rootNode);
  return found;
}

export interface Decorated {
  readonly name: string;
  readonly node: Node;
  /** Decorator call texts without the "@", e.g. "secure()", "minValue(1)". */
  readonly decorators: readonly string[];
}

export interface ParamDeclaration extends Decorated {
  readonly type: string;
  readonly defaultValue: Node | undefined;
}

export interface ResourceDeclaration extends Decorated {
  /** e.g. "Microsoft.Network/loadBalancers@2024-05-01". */
  readonly typeWithVersion: string;
  readonly resourceType: string;
  readonly body: Node;
  readonly existing: boolean;
}

export interface ModuleDeclaration extends Decorated {
  readonly path: string;
  readonly body: Node;
}

export interface OutputDeclaration extends Decorated {
  readonly type: string;
  readonly value: Node;
}

export interface BicepFile {
  readonly path: string;
  readonly source: string;
  readonly tree: Tree;
  readonly targetScope: string | undefined;
  readonly params: ReadonlyMap<string, ParamDeclaration>;
  readonly variables: ReadonlyMap<string, Node>;
  readonly resources: readonly ResourceDeclaration[];
  readonly modules: readonly ModuleDeclaration[];
  readonly outputs: ReadonlyMap<string, OutputDeclaration>;
  /** Statement kinds in file order (for the STYLE.md ordering rule). */
  readonly order: readonly string[];
}

const named = (node: Node): Node[] => node.namedChildren.filter((child): child is Node => child !== null);

function first(node: Node, type: string): Node {
  const found = named(node).find((child) => child.type === type);
  if (!found) throw new Error(`no ${type} in ${node.type} at line ${node.startPosition.row + 1}`);
  return found;
}

export async function parseBicepFile(path: string): Promise<BicepFile> {
  const source = readFileSync(path, 'utf8');
  const tree = (await bicepParser()).parse(source);
  if (!tree) throw new Error(`tree-sitter returned no tree for ${path}`);
  const params = new Map<string, ParamDeclaration>();
  const variables = new Map<string, Node>();
  const resources: ResourceDeclaration[] = [];
  const modules: ModuleDeclaration[] = [];
  const outputs = new Map<string, OutputDeclaration>();
  const order: string[] = [];
  let targetScope: string | undefined;
  let pending: string[] = [];
  for (const statement of named(tree.rootNode)) {
    if (statement.type === 'decorators') {
      pending = named(statement).map((decorator) => decorator.text.replace(/^@/, ''));
      continue;
    }
    // `#disable-next-line <rule>` between a declaration's decorators and the declaration itself belongs to the
    // declaration.
    if (statement.type === 'comment' || statement.type === 'diagnostic_comment') continue;
    const decorators = pending;
    pending = [];
    const children = named(statement);
    const name = children[0]?.text ?? '';
    order.push(statement.type);
    switch (statement.type) {
      case 'target_scope_assignment':
        targetScope = stringLiteral(first(statement, 'string'));
        break;
      case 'parameter_declaration':
        params.set(name, {
          name,
          node: statement,
          decorators,
          type: first(statement, 'type').text,
          defaultValue: children[2],
        });
        break;
      case 'variable_declaration':
        variables.set(name, children[1] as Node);
        break;
      case 'resource_declaration': {
        const typeWithVersion = stringLiteral(children[1] as Node);
        // A conditional resource (`= if (condition) { ... }`): the body is the if_statement's object; a looped one
        // (`= [for i in range(0, n): { ... }]`): the loop's body, the object every element is made from.
        const last = children[children.length - 1] as Node;
        const body =
          last.type === 'if_statement'
            ? (named(last).find((child) => child.type === 'object') ?? last)
            : last.type === 'for_statement'
              ? (last.childForFieldName('body') ?? last)
              : last;
        resources.push({
          name,
          node: statement,
          decorators,
          typeWithVersion,
          resourceType: typeWithVersion.split('@')[0] ?? '',
          body,
          existing: statement.children.some((child) => child?.type === 'existing'),
        });
        break;
      }
      case 'module_declaration': {
        // A conditional module (`= if (condition) { ... }`): the body is the if_statement's object, as for resources.
        const last = children[children.length - 1] as Node;
        const body =
          last.type === 'if_statement' ? (named(last).find((child) => child.type === 'object') ?? last) : last;
        modules.push({ name, node: statement, decorators, path: stringLiteral(children[1] as Node), body });
        break;
      }
      case 'output_declaration':
        outputs.set(name, {
          name,
          node: statement,
          decorators,
          type: first(statement, 'type').text,
          value: children[2] as Node,
        });
        break;
    }
  }
  return { path, source, tree, targetScope, params, variables, resources, modules, outputs, order };
}

/** The value of a string literal without interpolation; throws on anything else. */
export function stringLiteral(node: Node): string {
  if (node.type !== 'string' || named(node).some((part) => part.type === 'interpolation')) {
    throw new Error(`expected a plain string literal, got ${node.type} ${node.text}`);
  }
  return named(node)
    .map((part) => (part.type === 'escape_sequence' ? unescape(part.text) : part.text))
    .join('');
}

function unescape(sequence: string): string {
  const map: Record<string, string> = { '\\n': '\n', '\\r': '\r', '\\t': '\t', "\\'": "'", '\\\\': '\\', '\\$': '$' };
  const value = map[sequence];
  if (value === undefined) throw new Error(`unsupported escape ${sequence}`);
  return value;
}

/** An expression that is not a literal, kept as its source text. */
export interface Expression {
  readonly expression: string;
}

export type BicepValue = string | number | boolean | null | Expression | BicepValue[] | { [key: string]: BicepValue };

/** Literal objects, arrays, strings, numbers and booleans as JS values; any other expression as `{ expression }`. */
export function literal(node: Node): BicepValue {
  switch (node.type) {
    case 'object': {
      const result: Record<string, BicepValue> = {};
      for (const property of named(node).filter((child) => child.type === 'object_property')) {
        const [key, value] = named(property);
        if (!key || !value) continue;
        result[key.type === 'string' ? safeKey(key) : key.text] = literal(value);
      }
      return result;
    }
    case 'array':
      return named(node)
        .filter((child) => child.type !== 'comment')
        .map(literal);
    case 'number':
      return Number(node.text);
    case 'boolean':
      return node.text === 'true';
    case 'null':
      return null;
    case 'string':
      return named(node).some((part) => part.type === 'interpolation')
        ? { expression: node.text }
        : stringLiteral(node);
    default:
      return { expression: node.text };
  }
}

function safeKey(key: Node): string {
  try {
    return stringLiteral(key);
  } catch {
    return key.text;
  }
}

export function isExpression(value: BicepValue | undefined): value is Expression {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as Expression).expression === 'string'
  );
}

/** Identifiers an expression reads (object keys and member names excluded). */
export function referencedIdentifiers(node: Node): Set<string> {
  const found = new Set<string>();
  const visit = (current: Node): void => {
    if (current.type === 'identifier') {
      const parent = current.parent;
      const isObjectKey = parent?.type === 'object_property' && parent.namedChildren[0]?.id === current.id;
      const isCallee = parent?.type === 'call_expression' && parent.namedChildren[0]?.id === current.id;
      if (!isObjectKey && !isCallee) found.add(current.text);
    }
    for (const child of named(current)) visit(child);
  };
  visit(node);
  return found;
}

/**
 * The parameters an expression depends on, following variables transitively. Resource and module
 * symbols are not followed: reading `secret.name` exposes the name, not the value.
 */
export function parameterDependencies(file: BicepFile, node: Node, seen = new Set<string>()): Set<string> {
  const result = new Set<string>();
  for (const identifier of referencedIdentifiers(node)) {
    if (file.params.has(identifier)) result.add(identifier);
    else if (file.variables.has(identifier) && !seen.has(identifier)) {
      seen.add(identifier);
      for (const dependency of parameterDependencies(file, file.variables.get(identifier) as Node, seen))
        result.add(dependency);
    }
  }
  return result;
}

/** Every node of a subtree whose object_property key is `key`. */
export function propertyValues(node: Node, key: string): Node[] {
  const found: Node[] = [];
  const visit = (current: Node): void => {
    if (current.type === 'object_property') {
      const [name, value] = named(current);
      if (name && value && name.text === key) found.push(value);
    }
    for (const child of named(current)) visit(child);
  };
  visit(node);
  return found;
}

/**
 * Evaluates the string expressions used to build customData: literals with interpolation, parameters
 * (from `params`), variables, integer `+`, `replace`, `base64`, `string`, `loadTextContent` and `loadFileAsBase64`
 * (paths relative to the file). Anything else becomes `<source text>`, so a test can see where an
 * unevaluated value lands.
 */
export function evaluateString(file: BicepFile, node: Node, params: Readonly<Record<string, string>>): string {
  const evaluate = (current: Node): string => {
    switch (current.type) {
      case 'string':
        return named(current)
          .map((part) =>
            part.type === 'interpolation'
              ? evaluate(named(part)[0] as Node)
              : part.type === 'escape_sequence'
                ? unescape(part.text)
                : part.text,
          )
          .join('');
      case 'number':
      case 'boolean':
        return current.text;
      case 'ternary_expression': {
        // `condition ? a : b`, the condition a boolean parameter or literal (evaluated to 'true' or 'false').
        const [condition, whenTrue, whenFalse] = named(current) as [Node, Node, Node];
        const decided = evaluate(condition);
        if (decided !== 'true' && decided !== 'false') return `<${current.text}>`;
        return evaluate(decided === 'true' ? whenTrue : whenFalse);
      }
      case 'binary_expression': {
        // Integer addition only (`${i + 1}` in a loop's name or node id); other operators stay unevaluated.
        const operator = current.children.find((candidate) => candidate !== null && !candidate.isNamed)?.text;
        const [left, right] = named(current).map(evaluate);
        if (operator === '+' && /^-?\d+$/.test(left ?? '') && /^-?\d+$/.test(right ?? ''))
          return String(Number(left) + Number(right));
        return `<${current.text}>`;
      }
      case 'identifier': {
        const name = current.text;
        if (name in params) return params[name] as string;
        const variable = file.variables.get(name);
        if (variable) return evaluate(variable);
        const param = file.params.get(name);
        if (param?.defaultValue) return evaluate(param.defaultValue);
        return `<${name}>`;
      }
      case 'call_expression': {
        const [callee, argumentList] = named(current);
        const args = argumentList ? named(argumentList) : [];
        const at = (index: number): Node => args[index] as Node;
        switch (callee?.text) {
          case 'replace':
            return evaluate(at(0))
              .split(evaluate(at(1)))
              .join(evaluate(at(2)));
          case 'base64':
            return Buffer.from(evaluate(at(0)), 'utf8').toString('base64');
          case 'string':
            return evaluate(at(0));
          case 'loadTextContent':
            return readFileSync(resolve(dirname(file.path), stringLiteral(at(0))), 'utf8');
          case 'loadFileAsBase64':
            return readFileSync(resolve(dirname(file.path), stringLiteral(at(0)))).toString('base64');
          default:
            return `<${current.text}>`;
        }
      }
      default:
        return `<${current.text}>`;
    }
  };
  return evaluate(node);
}
