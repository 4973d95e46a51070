import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Node } from 'web-tree-sitter';
import { BICEP_DIR, bicepParser, listFiles, relativeToBicep, stringLiteral, syntaxErrors } from './bicep-tree';

const CHECKOV = resolve(__dirname, '../../.venv-tools/bin/checkov');

interface CheckovReport {
  summary: { passed: number; failed: number; skipped: number; parsing_errors: number };
  results: { failed_checks: { check_id: string; check_name: string; file_path: string; resource: string }[] };
}

/**
 * checkov's Bicep parser (pycep-parser 0.5.1) predates user-defined types
 * (https://learn.microsoft.com/azure/azure-resource-manager/bicep/user-defined-data-types) and compile-time imports
 * (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-import): a `type` statement, an `import`, or a
 * parameter typed `string[]` or `tagsType` is a parsing error (each checked alone), and the whole file goes unscanned.
 * The copy checkov scans drops every type declaration (with the decorators attached to it) and every import, and
 * gives each parameter and output the base type its user-defined type compiles to (`string[]` → array, `tagsType` →
 * object, `'1' | '2'` → string, `int?` → int): what the compiled ARM template declares as the parameter's
 * `type`. The resources checkov checks are untouched.
 *
 * The edits are found in the tree-sitter tree, not with regular expressions: a type expression nests (`('a' | 'b')[]`,
 * objects with decorated properties over several lines), and a regex would also match the same words inside
 * descriptions and strings.
 */
export async function withoutUserDefinedTypes(path: string, source: string): Promise<{ text: string; edits: number }> {
  const parser = await bicepParser();
  const tree = parser.parse(source);
  if (!tree) throw new Error(`tree-sitter returned no tree for ${path}`);
  const errors = syntaxErrors(tree);
  if (errors.length > 0) throw new Error(`${path}: syntax errors ${errors.join('; ')}`);
  const statements = tree.rootNode.namedChildren.filter((node): node is Node => node !== null);
  const bases = await typeBases(path, statements);
  const edits: { start: number; end: number; text: string }[] = [];
  statements.forEach((statement, index) => {
    if (statement.type === 'type_declaration' || statement.type === 'import_functionality') {
      const before = statements[index - 1];
      const start = before?.type === 'decorators' ? before.startIndex : statement.startIndex;
      edits.push({ start, end: statement.endIndex, text: '' });
    }
    if (statement.type === 'parameter_declaration' || statement.type === 'output_declaration') {
      const type = statement.namedChildren.find((child) => child?.type === 'type');
      if (!type) throw new Error(`${path}:${statement.startPosition.row + 1}: ${statement.type} without a type`);
      const base = baseType(type, bases, path);
      if (base !== type.text) edits.push({ start: type.startIndex, end: type.endIndex, text: base });
    }
  });
  // The offsets index the source string only if every statement reads back as its text; refuse rather than corrupt.
  if (!statements.every((node) => source.slice(node.startIndex, node.endIndex) === node.text)) {
    throw new Error(`${path}: tree-sitter offsets do not match the source text`);
  }
  let text = source;
  for (const edit of edits.sort((a, b) => b.start - a.start)) {
    text = text.slice(0, edit.start) + edit.text + text.slice(edit.end);
  }
  return { text, edits: edits.length };
}

/** The base type of every type a file declares or imports (imports read from the file they name). */
async function typeBases(path: string, statements: readonly Node[]): Promise<Map<string, string>> {
  const bases = new Map<string, string>();
  const declarations = new Map<string, Node>();
  for (const statement of statements) {
    if (statement.type === 'type_declaration') {
      const [name, value] = statement.namedChildren;
      if (name && value) declarations.set(name.text, value);
    }
    if (statement.type === 'import_functionality') {
      const names = statement.namedChildren.filter((child): child is Node => child?.type === 'identifier');
      const from = statement.namedChildren.find((child) => child?.type === 'string');
      if (!from) throw new Error(`${path}: an import without a file`);
      const imported = resolve(dirname(path), stringLiteral(from));
      const importedTree = (await bicepParser()).parse(readFileSync(imported, 'utf8'));
      const importedStatements = importedTree?.rootNode.namedChildren.filter((node): node is Node => node !== null);
      const importedBases = await typeBases(imported, importedStatements ?? []);
      for (const name of names) bases.set(name.text, importedBases.get(name.text) ?? 'unknown');
    }
  }
  // A declared type may name another declared later: resolve until nothing changes.
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, value] of declarations) {
      if (bases.has(name)) continue;
      const base = baseType(value, bases, path, false);
      if (base === undefined) continue;
      bases.set(name, base);
      changed = true;
    }
  }
  return bases;
}

const PRIMITIVES = new Set(['string', 'int', 'bool', 'array', 'object']);

function baseType(node: Node, bases: ReadonlyMap<string, string>, path: string, required?: true): string;
function baseType(node: Node, bases: ReadonlyMap<string, string>, path: string, required: false): string | undefined;
function baseType(node: Node, bases: ReadonlyMap<string, string>, path: string, required = true): string | undefined {
  const inner = (child: Node | null | undefined): string | undefined =>
    child ? baseType(child, bases, path, false) : undefined;
  let base: string | undefined;
  switch (node.type) {
    case 'type':
    case 'parenthesized_type':
    case 'parenthesized_expression':
    case 'nullable_type':
      base = inner(node.namedChildren[0]);
      break;
    case 'array_type':
      base = 'array';
      break;
    case 'object':
      base = 'object';
      break;
    case 'union_type':
    case 'binary_expression':
      base = inner(node.namedChildren[0]);
      break;
    case 'string':
      base = 'string';
      break;
    case 'number':
      base = 'int';
      break;
    case 'boolean':
      base = 'bool';
      break;
    case 'primitive_type':
    case 'identifier':
      base = PRIMITIVES.has(node.text) ? node.text : bases.get(node.text);
      break;
  }
  if (base === undefined && required) {
    throw new Error(`${path}:${node.startPosition.row + 1}: no base type for ${node.type} ${node.text.slice(0, 40)}`);
  }
  return base;
}

describe('checkov', () => {
  test('the copy checkov scans has no type declaration or import, and parameters of their base types', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-checkov-types-'));
    try {
      writeFileSync(join(dir, 'shared.bicep'), "@export()\n@description('A zone.')\ntype zoneType = '1' | '2'\n");
      const source = [
        "import { zoneType } from 'shared.bicep'",
        "@description('Optional. Zones.')",
        "param zones zoneType[] = ['1']",
        "@description('Optional. Tags.')",
        'param tags tagsType = {}',
        "@description('Optional. A port.')",
        'param port portType?',
        "@description('Required. A zone.')",
        'param zone zoneType',
        "@description('Optional. A note that mentions type tagsType = string[].')",
        "param note string = 'type x = y'",
        'output zones string[] = zones',
        '',
        '@export()',
        "@description('Tags.')",
        'type tagsType = {',
        "  @description('Optional. Any tag.')",
        '  *: string',
        '}',
        'type portType = 5671 | 5672',
        '',
      ].join('\n');
      const { text, edits } = await withoutUserDefinedTypes(join(dir, 'main.bicep'), source);
      expect(edits).toBe(8);
      expect(text.split('\n').filter((line) => line.trim() !== '')).toEqual([
        "@description('Optional. Zones.')",
        "param zones array = ['1']",
        "@description('Optional. Tags.')",
        'param tags object = {}',
        "@description('Optional. A port.')",
        'param port int',
        "@description('Required. A zone.')",
        'param zone string',
        "@description('Optional. A note that mentions type tagsType = string[].')",
        "param note string = 'type x = y'",
        'output zones array = zones',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(
    'scans every Bicep template with no failed check and no parsing error ' + '(skips carry a reason in the file)',
    async () => {
      if (!existsSync(CHECKOV)) {
        throw new Error(
          `checkov is not installed at ${CHECKOV}: run scripts/setup.sh (it installs checkov into .venv-tools)`,
        );
      }
      // checkov's Bicep parser (pycep) does not know fail()
      // (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-flow-control),
      // which main.bicep uses in variables to refuse bad parameters. checkov scans a copy in which each
      // fail('...') reads string('...'):
      // the same expression shape, with no effect on the resources it checks. Nor does it know cidrHost()
      // (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-cidr#cidrhost), with which
      // modules/kafka-cluster.bicep computes the brokers' static IPs: it reads concat() there, a string function of two
      // arguments.
      // User-defined types and imports are taken out of the copy too (withoutUserDefinedTypes above).
      const copy = mkdtempSync(join(tmpdir(), 'rmqbench-checkov-'));
      let failCalls = 0;
      let typeEdits = 0;
      let run: SpawnSyncReturns<string>;
      try {
        cpSync(BICEP_DIR, copy, { recursive: true });
        for (const path of listFiles('.bicep')) {
          const untyped = await withoutUserDefinedTypes(path, readFileSync(path, 'utf8'));
          typeEdits += untyped.edits;
          failCalls += (untyped.text.match(/\bfail\(/g) ?? []).length;
          writeFileSync(
            join(copy, relativeToBicep(path)),
            untyped.text.replace(/\bfail\(/g, 'string(').replace(/\bcidrHost\(/g, 'concat('),
          );
        }
        run = spawnSync(
          CHECKOV,
          [
            '--skip-download',
            '--framework',
            'bicep',
            '--directory',
            copy,
            '--output',
            'json',
            '--quiet',
            '--soft-fail',
          ],
          {
            encoding: 'utf8',
            timeout: 180_000,
          },
        );
      } finally {
        rmSync(copy, { recursive: true, force: true });
      }
      expect(failCalls).toBeGreaterThan(0);
      expect(typeEdits).toBeGreaterThan(0);
      expect(run.error).toBeUndefined();
      const report = JSON.parse(run.stdout) as CheckovReport | CheckovReport[];
      const reports = Array.isArray(report) ? report : [report];
      const failed = reports.flatMap((entry) =>
        entry.results.failed_checks.map(
          (check) => `${check.check_id} ${check.file_path} ${check.resource}: ${check.check_name}`,
        ),
      );
      expect(failed).toEqual([]);
      expect(reports.reduce((sum, entry) => sum + entry.summary.parsing_errors, 0)).toBe(0);
      // Every module must have been scanned: an unparsed file would pass vacuously.
      expect(reports.reduce((sum, entry) => sum + entry.summary.passed, 0)).toBeGreaterThan(20);
    },
    200_000,
  );
});
