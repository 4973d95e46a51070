/**
 * Bicep's user-defined types (https://learn.microsoft.com/azure/azure-resource-manager/bicep/user-defined-data-types)
 * for the Bicep evaluator: type expressions read from the tree-sitter tree, and a value checked against one as ARM
 * checks a parameter of the compiled template. Bicep compiles a union of literals to `allowedValues` (on the array for
 * an array of them), an object type to `properties` (each `nullable` when optional), `*` to `additionalProperties` and
 * @sealed() to `additionalProperties: false`
 * (https://learn.microsoft.com/azure/azure-resource-manager/templates/definitions,
 * https://learn.microsoft.com/azure/azure-resource-manager/templates/data-types); ARM refuses a value that does not fit
 * before it deploys anything. An object type without `*` and without @sealed() admits other properties, as ARM does.
 *
 * Shared types come from another file through a compile-time import
 * (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-import): `import { a, b } from 'file.bicep'`
 * of types marked @export(). Aliases, wildcard imports and anything else not described here are refused through the
 * caller's `unsupported`, never guessed.
 */
import { dirname, resolve } from 'node:path';
import type { Node } from 'web-tree-sitter';
import { stringLiteral } from '../../bicep/bicep-tree';

export type PrimitiveType = 'string' | 'int' | 'bool' | 'array' | 'object';

export const ARM_TYPE_NAMES: Readonly<Record<PrimitiveType, string>> = {
  string: 'String',
  int: 'Int',
  bool: 'Bool',
  array: 'Array',
  object: 'Object',
};

export const isPrimitiveType = (type: string): type is PrimitiveType => Object.hasOwn(ARM_TYPE_NAMES, type);

export interface TypeProperty {
  readonly name: string;
  readonly type: BicepType;
}

export type BicepType =
  | { readonly kind: 'primitive'; readonly name: PrimitiveType }
  | { readonly kind: 'literal'; readonly value: string | number | boolean | null }
  | { readonly kind: 'union'; readonly members: readonly BicepType[] }
  | { readonly kind: 'array'; readonly items: BicepType }
  | {
      readonly kind: 'object';
      readonly properties: readonly TypeProperty[];
      /** The type of every other property (`*: type`); undefined: any value, unless sealed. */
      readonly additional: BicepType | undefined;
      readonly sealed: boolean;
    }
  | { readonly kind: 'nullable'; readonly inner: BicepType };

/** Throws the caller's UnsupportedBicepError for a construct this reader does not implement. */
export type Unsupported = (node: Node, what?: string) => never;

const isTrivia = (node: Node): boolean => node.type === 'comment' || node.type === 'diagnostic_comment';
const namedOf = (node: Node): Node[] =>
  node.namedChildren.filter((child): child is Node => child !== null && !isTrivia(child));
const tokensOf = (node: Node): string[] =>
  node.children.filter((child): child is Node => child !== null && !child.isNamed).map((child) => child.type);

/** The names of a statement's decorators (`@export()` → 'export'), from the decorators node before it. */
export function decoratorNames(statement: Node, unsupported: Unsupported): string[] {
  let previous = statement.previousNamedSibling;
  while (previous && isTrivia(previous)) previous = previous.previousNamedSibling;
  if (previous?.type !== 'decorators') return [];
  return namedOf(previous).map((decorator) => {
    const callee = namedOf(decorator)[0]?.childForFieldName('function');
    return callee?.type === 'identifier' ? callee.text : unsupported(decorator, 'decorator');
  });
}

/** The decorators a type declaration may carry here: the rest (@minLength on a type, ...) is refused. */
const TYPE_DECORATORS = new Set(['export', 'description', 'sealed']);

/**
 * A file's type declarations, converted on first use (a type may name one declared after it), and the imported ones.
 */
export class TypeReader {
  private readonly declarations = new Map<string, Node>();
  private readonly converted = new Map<string, BicepType>();
  private readonly converting = new Set<string>();

  constructor(
    root: Node,
    private readonly imported: ReadonlyMap<string, BicepType>,
    private readonly unsupported: Unsupported,
  ) {
    for (const statement of namedOf(root)) {
      if (statement.type !== 'type_declaration') continue;
      const name = namedOf(statement)[0];
      if (name?.type !== 'identifier') unsupported(statement, 'type declaration');
      this.declarations.set(name.text, statement);
    }
  }

  /** The types this file marks @export(), for the files that import them. */
  exported(): Map<string, BicepType> {
    const found = new Map<string, BicepType>();
    for (const [name, statement] of this.declarations) {
      if (decoratorNames(statement, this.unsupported).includes('export')) found.set(name, this.named(name, statement));
    }
    return found;
  }

  /** A parameter's type (the `type` node of its declaration), @sealed() on the parameter applied. */
  parameter(typeNode: Node, declaration: Node): BicepType {
    const type = this.convert(typeNode);
    return decoratorNames(declaration, this.unsupported).includes('sealed') ? sealed(type, declaration, this) : type;
  }

  fail(node: Node, what?: string): never {
    return this.unsupported(node, what);
  }

  private named(name: string, at: Node): BicepType {
    const done = this.converted.get(name) ?? this.imported.get(name);
    if (done) return done;
    const statement = this.declarations.get(name);
    if (!statement) return this.unsupported(at, `type '${name}' (neither declared here nor imported)`);
    if (this.converting.has(name)) return this.unsupported(statement, 'recursive type');
    this.converting.add(name);
    const decorators = decoratorNames(statement, this.unsupported);
    const refused = decorators.filter((decorator) => !TYPE_DECORATORS.has(decorator));
    if (refused.length > 0) this.unsupported(statement, `type decorator @${refused.join(', @')}`);
    const value = namedOf(statement)[1] ?? this.unsupported(statement, 'type declaration without a type');
    const converted = this.convert(value);
    const type = decorators.includes('sealed') ? sealed(converted, statement, this) : converted;
    this.converting.delete(name);
    this.converted.set(name, type);
    return type;
  }

  convert(node: Node): BicepType {
    switch (node.type) {
      case 'type':
      case 'parenthesized_type':
      case 'parenthesized_expression': {
        const children = namedOf(node);
        return children.length === 1 && children[0] ? this.convert(children[0]) : this.unsupported(node, 'type');
      }
      case 'primitive_type':
      case 'identifier':
        return isPrimitiveType(node.text) ? { kind: 'primitive', name: node.text } : this.named(node.text, node);
      case 'array_type':
        return { kind: 'array', items: this.convert(namedOf(node)[0] ?? this.unsupported(node, 'array type')) };
      case 'nullable_type':
        return { kind: 'nullable', inner: this.convert(namedOf(node)[0] ?? this.unsupported(node, 'nullable type')) };
      case 'union_type':
        return { kind: 'union', members: namedOf(node).map((member) => this.convert(member)) };
      case 'binary_expression':
        // At the top of a type declaration the grammar may read `'a' | 'b'` as an expression with the `|` operator.
        if (!tokensOf(node).includes('|')) return this.unsupported(node, 'type expression');
        return { kind: 'union', members: namedOf(node).flatMap((member) => unionMembers(this.convert(member))) };
      case 'string':
        try {
          return { kind: 'literal', value: stringLiteral(node) };
        } catch {
          return this.unsupported(node, 'string type with interpolation or an unknown escape');
        }
      case 'number':
        return /^\d+$/.test(node.text) ? { kind: 'literal', value: Number(node.text) } : this.unsupported(node);
      case 'boolean':
        return { kind: 'literal', value: node.text === 'true' };
      case 'null':
        return { kind: 'literal', value: null };
      case 'object':
        return this.object(node);
      default:
        return this.unsupported(node, `type expression ${node.type}`);
    }
  }

  private object(node: Node): BicepType {
    const properties: TypeProperty[] = [];
    let additional: BicepType | undefined;
    for (const child of namedOf(node)) {
      if (child.type === 'decorators') {
        const names = namedOf(child).map((decorator) => namedOf(decorator)[0]?.childForFieldName('function')?.text);
        if (names.some((name) => name !== 'description')) this.unsupported(child, 'property decorator');
        continue;
      }
      if (child.type !== 'object_property') return this.unsupported(child, 'object type member');
      const parts = namedOf(child);
      if (parts.length === 1 && tokensOf(child).includes('*')) {
        additional = this.convert(parts[0] as Node);
        continue;
      }
      const [key, value] = parts;
      if (!key || !value || parts.length !== 2) return this.unsupported(child, 'object type property');
      const name = key.type === 'identifier' ? key.text : key.type === 'string' ? stringLiteral(key) : undefined;
      if (name === undefined) return this.unsupported(key, 'object type key');
      properties.push({ name, type: this.convert(value) });
    }
    return { kind: 'object', properties, additional, sealed: false };
  }
}

function unionMembers(type: BicepType): readonly BicepType[] {
  return type.kind === 'union' ? type.members : [type];
}

function sealed(type: BicepType, at: Node, reader: TypeReader): BicepType {
  if (type.kind !== 'object') return reader.fail(at, '@sealed() on a type that is not an object type');
  if (type.additional) return reader.fail(at, '@sealed() on an object type with `*` properties');
  return { ...type, sealed: true };
}

/** The names a file imports, by the path (absolute) of the file they come from. */
export function importsOf(root: Node, from: string, unsupported: Unsupported): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const statement of namedOf(root)) {
    if (statement.type !== 'import_functionality') continue;
    const tokens = tokensOf(statement);
    if (tokens.includes('*') || tokens.includes('as')) unsupported(statement, 'wildcard or aliased import');
    const parts = namedOf(statement);
    const source = parts.at(-1);
    if (source?.type !== 'string' || /^[a-z]+:/.test(stringLiteral(source))) {
      return unsupported(statement, 'import from a registry or an unknown source');
    }
    const path = resolve(dirname(from), stringLiteral(source));
    found.set(path, [...(found.get(path) ?? []), ...parts.slice(0, -1).map((name) => name.text)]);
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------------------------
// Values.

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

export function armTypeOf(value: unknown): string {
  if (typeof value === 'string') return 'String';
  if (typeof value === 'number') return Number.isInteger(value) ? 'Int' : 'Number';
  if (typeof value === 'boolean') return 'Bool';
  if (Array.isArray(value)) return 'Array';
  if (isRecord(value)) return 'Object';
  return value === null ? 'Null' : typeof value;
}

export function deepEqual(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (Array.isArray(left) && Array.isArray(right)) {
    return left.length === right.length && left.every((item, index) => deepEqual(item, right[index]));
  }
  if (!isRecord(left) || !isRecord(right)) return false;
  const keys = Object.keys(left);
  return (
    keys.length === Object.keys(right).length &&
    keys.every((key) => Object.hasOwn(right, key) && deepEqual(left[key], right[key]))
  );
}

export const isNullable = (type: BicepType): boolean =>
  type.kind === 'nullable' ||
  (type.kind === 'literal' && type.value === null) ||
  (type.kind === 'union' && type.members.some(isNullable));

const memberPath = (path: string, name: string): string =>
  /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `${path}.${name}` : `${path}['${name.replace(/'/g, "\\'")}']`;

const literalText = (type: BicepType): string =>
  type.kind === 'literal' ? (type.value === null ? 'null' : String(type.value)) : JSON.stringify(type);

/**
 * Why `value` does not fit `type`, in ARM's words (see validateParameter in bicep-evaluator.ts), or undefined when it
 * does. `path` locates a nested value ('[0]', '.name', "['rmqbench:run-id']"); '' is the parameter itself, whose
 * messages are exactly those of an untyped parameter.
 */
export function typeProblem(type: BicepType, value: unknown, path = ''): string | undefined {
  const at = path === '' ? '' : ` at '${path.replace(/^\./, '')}'`;
  switch (type.kind) {
    case 'nullable':
      return value === null ? undefined : typeProblem(type.inner, value, path);
    case 'primitive': {
      const [expected, actual] = [ARM_TYPE_NAMES[type.name], armTypeOf(value)];
      return actual === expected
        ? undefined
        : `Expected a value of type '${expected}'${at}, but received a value of type '${actual}'.`;
    }
    case 'literal':
    case 'union': {
      const members = unionMembers(type);
      const fits = (member: BicepType): boolean =>
        member.kind === 'literal' ? deepEqual(member.value, value) : typeProblem(member, value, path) === undefined;
      if (members.some(fits)) return undefined;
      const allowed = members.map(literalText).join(',');
      return path === ''
        ? `The parameter value is not part of the allowed value(s): '${allowed}'.`
        : `The value${at} is not part of the allowed value(s): '${allowed}'.`;
    }
    case 'array':
      if (!Array.isArray(value)) return typeProblem({ kind: 'primitive', name: 'array' }, value, path);
      for (const [index, item] of value.entries()) {
        const problem = typeProblem(type.items, item, `${path}[${index}]`);
        if (problem) return problem;
      }
      return undefined;
    case 'object':
      return objectProblem(type, value, path, at);
  }
}

function objectProblem(
  type: Extract<BicepType, { kind: 'object' }>,
  value: unknown,
  path: string,
  at: string,
): string | undefined {
  if (!isRecord(value)) return typeProblem({ kind: 'primitive', name: 'object' }, value, path);
  for (const property of type.properties) {
    const given = value[property.name];
    if (given === undefined) {
      if (isNullable(property.type)) continue;
      return `The value${at} is missing the required property '${property.name}'.`;
    }
    const problem = typeProblem(property.type, given, memberPath(path, property.name));
    if (problem) return problem;
  }
  const declared = new Set(type.properties.map((property) => property.name));
  for (const [name, given] of Object.entries(value)) {
    if (declared.has(name)) continue;
    if (type.sealed) {
      const allowed = [...declared].join(', ');
      return `The property '${name}'${at} is not allowed: the object type is sealed (its properties: '${allowed}').`;
    }
    const problem = type.additional ? typeProblem(type.additional, given, memberPath(path, name)) : undefined;
    if (problem) return problem;
  }
  return undefined;
}
