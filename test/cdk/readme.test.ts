import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as ts from 'typescript';

const ROOT = resolve(__dirname, '../..');

/** The ```ts blocks of cdk/README.md, type-checked as a user would compile them (importing 'rmqbench'). */
describe('cdk/README.md', () => {
  test('every TypeScript example compiles against the package', () => {
    const readme = readFileSync(resolve(ROOT, 'cdk/README.md'), 'utf8');
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] as string);
    expect(blocks.length).toBeGreaterThan(0);
    const files = new Map(blocks.map((code, index) => [resolve(ROOT, `test/cdk/__readme_example_${index}.ts`), code]));
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      esModuleInterop: true,
      skipLibCheck: true,
      types: ['node'],
      baseUrl: ROOT,
      paths: { rmqbench: ['cdk/index.ts'] },
    };
    const host = ts.createCompilerHost(options);
    const readFile = host.readFile.bind(host);
    const fileExists = host.fileExists.bind(host);
    const getSourceFile = host.getSourceFile.bind(host);
    host.readFile = (name) => files.get(name) ?? readFile(name);
    host.fileExists = (name) => files.has(name) || fileExists(name);
    host.getSourceFile = (name, languageVersion) => {
      const code = files.get(name);
      return code === undefined
        ? getSourceFile(name, languageVersion)
        : ts.createSourceFile(name, code, languageVersion, true);
    };
    const program = ts.createProgram([...files.keys()], options, host);
    const problems = ts
      .getPreEmitDiagnostics(program)
      .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    expect(problems).toEqual([]);
  }, 120_000);
});
