import { readFileSync } from 'node:fs';
import { bicepParser, listFiles, relativeToBicep, syntaxErrors } from './bicep-tree';

/**
 * tree-sitter-bicep 1.1.0 has no rule for the `.bicepparam` assignment `param name = value` (its
 * `param` always takes a type), so a parameter file is parsed with each such line's keyword replaced
 * by `var` padded to the same width: `var name = value` has exactly the shape of the assignment, and
 * every expression on the right-hand side is still parsed by the real grammar. Nothing else is changed.
 */
export function asParsableParameterFile(source: string): string {
  return source.replace(/^param(\s+[A-Za-z_][A-Za-z0-9_]*\s*=)/gm, 'var  $1');
}

describe('Bicep sources parse with the tree-sitter Bicep grammar', () => {
  const templates = listFiles('.bicep');
  const parameterFiles = listFiles('.bicepparam');

  test('the template and parameter files exist', () => {
    expect(templates.map(relativeToBicep)).toEqual(
      expect.arrayContaining([
        'main.bicep',
        'modules/network.bicep',
        'modules/cluster.bicep',
        'modules/loadgen.bicep',
        'modules/secrets.bicep',
      ]),
    );
    expect(parameterFiles.length).toBeGreaterThanOrEqual(3);
  });

  test.each(templates.map((path) => [relativeToBicep(path), path]))(
    '%s has no ERROR or MISSING node',
    async (_name, path) => {
      const tree = (await bicepParser()).parse(readFileSync(path, 'utf8'));
      expect(tree && syntaxErrors(tree)).toEqual([]);
    },
  );

  test.each(parameterFiles.map((path) => [relativeToBicep(path), path]))(
    '%s has no ERROR or MISSING node (param assignments read as var declarations)',
    async (_name, path) => {
      const source = readFileSync(path, 'utf8');
      const lines = source.split('\n').filter((line) => line.trim() !== '' && !line.trim().startsWith('//'));
      // Only the statement kinds a parameter file may hold, so the rewrite cannot hide anything.
      for (const line of lines)
        expect(line).toMatch(
          /^(using '[^']+'$|param [A-Za-z_][A-Za-z0-9_]* = |var [A-Za-z_][A-Za-z0-9_]* = |\s|[}\])])/,
        );
      const tree = (await bicepParser()).parse(asParsableParameterFile(source));
      expect(tree && syntaxErrors(tree)).toEqual([]);
    },
  );

  test('the grammar reports an error for a broken template (the check can fail)', async () => {
    const tree = (await bicepParser()).parse(
      "resource r 'Microsoft.Network/virtualNetworks@2024-05-01' = {\n  name: 'x'\n  properties: {\n",
    );
    expect(tree && syntaxErrors(tree)).not.toEqual([]);
  });
});
