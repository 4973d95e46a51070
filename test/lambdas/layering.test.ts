import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Data flows one way (STYLE.md): the functions adapt events to core/ and never reach into the constructs. A function
 * bundle that imported cdk/ would carry construct code (and aws-cdk-lib) into Lambda.
 */
const root = join(__dirname, '..', '..');
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

test('nothing under lambdas/ or core/ imports cdk/ or aws-cdk-lib', () => {
  const offenders = ['lambdas', 'core'].flatMap((dir) =>
    sources(join(root, dir)).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/from '([^']+)'/g)]
        .map((match) => match[1]!)
        .filter(
          (specifier) =>
            /(^|\/)cdk\//.test(specifier) || specifier.startsWith('aws-cdk-lib') || specifier === 'constructs',
        )
        .map((specifier) => `${relative(root, file)} imports ${specifier}`),
    ),
  );
  expect(offenders).toEqual([]);
});
