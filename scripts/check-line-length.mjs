// No source line over 120 columns (issue 24), in every TypeScript and JavaScript source.
// node scripts/check-line-length.mjs
//
// Prettier (npm run lint runs `prettier --check`) wraps code at 120 columns but never splits a string literal, a regex
// literal or a URL: split long strings and regexes by hand (`new RegExp(String.raw`…` + String.raw`…`)` in tests).
// The one exception is a URL that cannot be split, on a comment line that is short enough without it (ESLint's
// max-len option ignoreUrls does the same: https://eslint.org/docs/latest/rules/max-len#ignoreurls).
import { readdirSync, readFileSync, statSync } from 'node:fs';
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

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'cdk.out') continue;
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(ts|mjs|js|cjs)$/.test(name) && !name.endsWith('.d.ts')) yield path;
  }
}

/** Columns are characters (code points), not bytes: "…" is one column. */
const columns = (text) => [...text].length;
/** A comment line (`//` or ` * `) that fits once its one URL is taken out. */
const isUnsplittableUrl = (line) => /^\s*(\/\/|\*)/.test(line) && columns(line.replace(/https?:\/\/\S+/, 'URL')) <= MAX;

const long = [];
for (const dir of DIRS) {
  for (const file of sources(join(root, dir))) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (columns(line) > MAX && !isUnsplittableUrl(line)) long.push(`${relative(root, file)}:${index + 1}`);
      });
  }
}
for (const where of long) console.log(`${where}: over ${MAX} columns: split the string, regex or comment`);
console.log(`check-line-length: ${long.length} line(s) over ${MAX} columns`);
process.exit(long.length > 0 ? 1 : 0);
