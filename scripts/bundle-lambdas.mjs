// Bundles every lambdas/<name>/index.ts into dist/lambda-bundles/<name>/ (esbuild, Node 22, ES modules with code
// splitting),
// so that `cdk synth` of an app using BenchmarkController needs neither esbuild nor Docker.
//
// Everything a function imports is bundled, the AWS SDK included: the SDK copy in the Lambda Node.js runtime is a
// version AWS chooses and changes, and AWS advises to ship the dependencies you rely on with the function
// (https://docs.aws.amazon.com/lambda/latest/dg/nodejs-package.html#nodejs-package-dependencies,
// https://docs.aws.amazon.com/lambda/latest/dg/lambda-nodejs.html#nodejs-sdk-included). @aws-sdk/lib-dynamodb and
// @aws-sdk/s3-request-presigner in particular are packages the runtime's SDK copy is not documented to contain.
//
// ES module output (index.mjs: Lambda loads a handler from an .mjs file as an ES module,
// https://docs.aws.amazon.com/lambda/latest/dg/nodejs-handler.html#nodejs-commonjs-es-modules) lets esbuild split what
// a handler imports with
// import() into chunks of their own (https://esbuild.github.io/api/#splitting): the Azure SDK, imported only where
// the target is azure, is a chunk that an AWS invocation never loads. The sizes printed are the bytes a cold start
// loads (the entry and the chunks it imports statically) and the whole folder.
//
// The bundles get a folder of their own, which is the Lambda asset: tsc writes dist/lambdas/<name>/index.js (CommonJS,
// requiring files outside the folder, which the local target runs), and Lambda would load an index.js before index.mjs.
//
// node scripts/bundle-lambdas.mjs [--out DIR]   (default dist/lambda-bundles; DIR/bundle-report.json records sizes and
// inputs)
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFlag = process.argv.indexOf('--out');
const outRoot = outFlag > 0 ? process.argv[outFlag + 1] : join(root, 'dist', 'lambda-bundles');
const names = readdirSync(join(root, 'lambdas'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(root, 'lambdas', entry.name, 'index.ts')))
  .map((entry) => entry.name)
  .sort();

// CommonJS packages bundled into an ES module still call require() for Node built-ins and read __dirname.
const banner = [
  "import { createRequire as __rmqbenchCreateRequire } from 'node:module';",
  "import { fileURLToPath as __rmqbenchFileUrlToPath } from 'node:url';",
  "import { dirname as __rmqbenchDirname } from 'node:path';",
  'const require = __rmqbenchCreateRequire(import.meta.url);',
  'const __filename = __rmqbenchFileUrlToPath(import.meta.url);',
  'const __dirname = __rmqbenchDirname(__filename);',
].join('\n');

// Packages whose modules have no side effects on import but do not say so in package.json ("sideEffects": false):
// declaring it lets esbuild drop them where nothing of them is used (https://esbuild.github.io/api/#tree-shaking).
// yaml is imported by core/plan/plan.ts for parsePlanText only, which no handler calls.
const SIDE_EFFECT_FREE = ['yaml'];
const sideEffectFree = {
  name: 'side-effect-free',
  setup(pluginBuild) {
    const filter = new RegExp(`^(${SIDE_EFFECT_FREE.join('|')})$`);
    pluginBuild.onResolve({ filter }, async (args) => {
      if (args.pluginData?.sideEffectFree) return undefined;
      const resolved = await pluginBuild.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { sideEffectFree: true },
      });
      return resolved.errors.length > 0 ? { errors: resolved.errors } : { path: resolved.path, sideEffects: false };
    });
  },
};

const packageOf = (input) => {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  return match ? match[1] : undefined;
};

async function bundle(name) {
  const outdir = join(outRoot, name);
  // The folder holds this bundle only (tsc's output, which the local target requires, is in dist/lambdas).
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: { index: join(root, 'lambdas', name, 'index.ts') },
    outdir,
    bundle: true,
    splitting: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    // ESM entry points first, so that esbuild can tree-shake the AWS SDK's dist-es modules.
    mainFields: ['module', 'main'],
    banner: { js: banner },
    plugins: [sideEffectFree],
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  // The NATS scripts carry the load client's source (lambdas/shared/nats-load-generator.ts natsLoadSourceFolder): a
  // bundle that includes them gets the source folder beside it.
  if (Object.keys(result.metafile.inputs).some((input) => input.endsWith('lambdas/shared/nats-load-generator.ts'))) {
    const source = join(root, 'local', 'nats-load');
    mkdirSync(join(outdir, 'nats-load'));
    for (const file of readdirSync(source).filter((file) => /^go\.(mod|sum)$|\.go$/.test(file)))
      copyFileSync(join(source, file), join(outdir, 'nats-load', file));
  }
  // The Kafka scripts carry the lost-message verifier's Java source (lambdas/shared/broker-verifier-lines.ts
  // kafkaVerifierSourceFile): a bundle whose code keeps them (not only imports their module) gets it beside it.
  const keeps = (suffix) =>
    Object.values(result.metafile.outputs).some((output) =>
      Object.entries(output.inputs).some(([input, { bytesInOutput }]) => input.endsWith(suffix) && bytesInOutput > 0),
    );
  if (keeps('lambdas/shared/broker-verifier-lines.ts')) {
    mkdirSync(join(outdir, 'kafka-verifier'));
    const file = 'KafkaLostMessageVerifier.java';
    copyFileSync(join(root, 'local', 'kafka-verifier', file), join(outdir, 'kafka-verifier', file));
  }
  const outputs = Object.fromEntries(
    Object.entries(result.metafile.outputs).map(([file, output]) => [
      relative(outdir, join(root, file)).replace(/\\/g, '/'),
      output,
    ]),
  );
  // What a cold start loads: the entry and, transitively, what it imports statically.
  const loaded = new Set();
  const visit = (file) => {
    if (loaded.has(file) || !outputs[file]) return;
    loaded.add(file);
    for (const imported of outputs[file].imports)
      if (imported.kind === 'import-statement' && !imported.external)
        visit(relative(outdir, join(root, imported.path)).replace(/\\/g, '/'));
  };
  visit('index.mjs');
  const packagesOf = (files) =>
    [
      ...new Set(
        files
          .flatMap((file) => Object.keys(outputs[file].inputs))
          .map(packageOf)
          .filter(Boolean),
      ),
    ].sort();
  const files = Object.keys(outputs);
  return {
    name,
    coldStartBytes: [...loaded].reduce((sum, file) => sum + outputs[file].bytes, 0),
    totalBytes: files.reduce((sum, file) => sum + outputs[file].bytes, 0),
    coldStartPackages: packagesOf([...loaded]),
    packages: packagesOf(files),
  };
}

mkdirSync(outRoot, { recursive: true });
const report = [];
for (const name of names) report.push(await bundle(name));
writeFileSync(join(outRoot, 'bundle-report.json'), `${JSON.stringify(report, null, 2)}\n`);
const kb = (bytes) => `${(bytes / 1024).toFixed(0).padStart(5)} KB`;
console.log(`bundled ${names.length} Lambda handlers into ${relative(root, outRoot) || outRoot}:`);
for (const entry of report)
  console.log(`  ${entry.name.padEnd(18)} cold start ${kb(entry.coldStartBytes)}   all chunks ${kb(entry.totalBytes)}`);
