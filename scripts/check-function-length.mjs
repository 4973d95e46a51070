// Functions longer than the limit (issue 24: no function over 80 lines in cdk/, bin/, core/, lambdas/, local/),
// measured from the line of their start to the line of their end, by the TypeScript compiler's own parser.
// node scripts/check-function-length.mjs [--max N] [--report]   (--report: list, exit 0)
//
// Until the functions written before the limit are split, scripts/function-length-baseline.json names each of them
// with its length then: the check fails for any other function over the limit and for one of those that grew
// (npm run lint runs it), so the list can only shrink. `--write-baseline` rewrites it from the tree.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const maxFlag = process.argv.indexOf('--max');
const max = maxFlag > 0 ? Number(process.argv[maxFlag + 1]) : 80;
const report = process.argv.includes('--report');
const BASELINE = join(root, 'scripts', 'function-length-baseline.json');
const DIRS = ['cdk', 'bin', 'core', 'lambdas', 'local'];

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) yield path;
  }
}

const offenders = [];
for (const dir of DIRS) {
  for (const file of sources(join(root, dir))) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (ts.isFunctionLike(node) && node.body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        const lines = end - start + 1;
        if (lines > max) {
          const name =
            node.name?.getText(source) ?? (ts.isConstructorDeclaration(node) ? 'constructor' : '(anonymous)');
          offenders.push({ where: `${relative(root, file)}:${start + 1}`, name, lines });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
}
offenders.sort((a, b) => b.lines - a.lines);
// A function is known by file and name (its line moves as the file is edited).
const keyOf = (offender) => `${offender.where.split(':')[0]} ${offender.name}`;
if (process.argv.includes('--write-baseline')) {
  writeFileSync(
    BASELINE,
    `${JSON.stringify(Object.fromEntries(offenders.map((offender) => [keyOf(offender), offender.lines])), null, 2)}\n`,
  );
}
const baseline = existsSync(BASELINE) ? JSON.parse(readFileSync(BASELINE, 'utf8')) : {};
const failing = offenders.filter(
  (offender) => !(keyOf(offender) in baseline) || offender.lines > baseline[keyOf(offender)],
);
for (const offender of offenders) {
  const known = baseline[keyOf(offender)];
  const note =
    known === undefined
      ? 'new: split it'
      : offender.lines > known
        ? `grew from ${known}: split it`
        : `known (${known})`;
  if (report || known === undefined || offender.lines > known)
    console.log(`${offender.where} ${offender.name}: ${offender.lines} lines, ${note}`);
}
console.log(
  `check-function-length: ${offenders.length} function(s) over ${max} lines in ${DIRS.join(', ')}, ` +
    `${failing.length} not allowed`,
);
if (failing.length > 0 && !report) process.exit(1);
