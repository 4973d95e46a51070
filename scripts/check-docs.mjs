// Checks the documentation a user navigates (issue 24): the README stays at most 300 lines, and every relative link in
// README.md, docs/*.md and the folder READMEs resolves to a file of the repository and, with #anchor, to a heading of
// that file (GitHub's anchor: the heading lower-cased, punctuation but - and _ dropped, spaces as -).
// node scripts/check-docs.mjs   (exit 1 with one line per problem)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const README_MAX_LINES = 300;
const files = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  ...['cdk', 'bicep', 'state-machines', 'test/simulated-vm']
    .map((dir) => `${dir}/README.md`)
    .filter((file) => existsSync(join(root, file))),
];

export function anchorOf(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file) {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  const seen = new Map();
  const anchors = new Set();
  for (const match of text.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = anchorOf(match[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

const problems = [];
const readmeLines = readFileSync(join(root, 'README.md'), 'utf8').split('\n').length - 1;
if (readmeLines > README_MAX_LINES)
  problems.push(`README.md has ${readmeLines} lines (at most ${README_MAX_LINES}: move detail to docs/)`);
for (const file of files) {
  const path = join(root, file);
  const text = readFileSync(path, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  for (const match of text.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
    const target = match[1];
    if (/^[a-z]+:/i.test(target)) continue;
    const [pathPart, anchor] = target.split('#');
    const resolved = pathPart ? resolve(dirname(path), pathPart) : path;
    if (!resolved.startsWith(root) || !existsSync(resolved)) {
      problems.push(`${file}: link ${target} names no file of the repository`);
      continue;
    }
    if (
      anchor !== undefined &&
      !statSync(resolved).isDirectory() &&
      resolved.endsWith('.md') &&
      !anchorsOf(resolved).has(anchor)
    ) {
      problems.push(`${file}: link ${target} names no heading of ${relative(root, resolved)}`);
    }
  }
}
for (const problem of problems) console.error(`check-docs: ${problem}`);
if (problems.length > 0) process.exit(1);
console.log(`check-docs: README.md ${readmeLines} lines; the links of ${files.length} files resolve`);
