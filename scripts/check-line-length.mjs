// Source lines over 120 columns (issue 24), counted per file in every TypeScript and JavaScript source.
// node scripts/check-line-length.mjs [--report] [--write-baseline]
//
// Prettier (npm run lint runs `prettier --check`) wraps code at 120 columns but never splits a string literal or a
// URL. Until the long strings written before the formatter are split, scripts/line-length-baseline.json holds each
// file's count of such lines then: the check fails for a file that gains one, so the list can only shrink.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const MAX = 120;
const DIRS = [
  'bench',
  'bin',
  'cdk',
  'core',
  'examples',
  'lambdas',
  'local',
  'scripts',
  'state-machines',
  'store',
  'test',
];
const BASELINE = join(root, 'scripts', 'line-length-baseline.json');

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'cdk.out') continue;
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(ts|mjs|js|cjs)$/.test(name) && !name.endsWith('.d.ts')) yield path;
  }
}

const counts = {};
for (const dir of DIRS) {
  for (const file of sources(join(root, dir))) {
    // Columns are characters (code points), not bytes: "…" is one column.
    const long = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => [...line].length > MAX).length;
    if (long > 0) counts[relative(root, file)] = long;
  }
}
if (process.argv.includes('--write-baseline')) writeFileSync(BASELINE, `${JSON.stringify(counts, null, 2)}\n`);
const baseline = existsSync(BASELINE) ? JSON.parse(readFileSync(BASELINE, 'utf8')) : {};
const failing = Object.entries(counts).filter(([file, count]) => count > (baseline[file] ?? 0));
for (const [file, count] of failing) {
  console.log(
    `${file}: ${count} line(s) over ${MAX} columns, ${baseline[file] ?? 0} allowed: split the string or comment`,
  );
}
if (process.argv.includes('--report'))
  for (const [file, count] of Object.entries(counts)) console.log(`${file}: ${count}`);
const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
console.log(
  `check-line-length: ${total} line(s) over ${MAX} columns in ${Object.keys(counts).length} file(s), ` +
    `${failing.length} file(s) over their allowance`,
);
process.exit(failing.length > 0 ? 1 : 0);
