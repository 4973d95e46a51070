// Bundles every lambdas/<name>/index.ts into dist/lambdas/<name>/index.js (esbuild, Node 22, CommonJS),
// so that `cdk synth` of an app using BenchmarkController needs neither esbuild nor Docker.
// @aws-sdk/* stays external: the Lambda Node.js runtime provides it.
import { build } from 'esbuild';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const names = readdirSync(join(root, 'lambdas'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(root, 'lambdas', entry.name, 'index.ts')))
  .map((entry) => entry.name);

await Promise.all(
  names.map((name) =>
    build({
      entryPoints: [join(root, 'lambdas', name, 'index.ts')],
      outfile: join(root, 'dist', 'lambdas', name, 'index.js'),
      bundle: true,
      platform: 'node',
      target: 'node22',
      format: 'cjs',
      external: ['@aws-sdk/*'],
      minify: true,
      sourcemap: false,
      legalComments: 'none',
      logLevel: 'warning',
    }),
  ),
);
console.log(`bundled ${names.length} Lambda handlers into dist/lambdas: ${names.join(', ')}`);
