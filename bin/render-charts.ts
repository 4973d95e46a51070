import { spawn } from 'node:child_process';
import { Resvg } from '@resvg/resvg-js';
import type { VegaLiteSpec } from '../core/report/charts';

/**
 * Renders Vega-Lite specifications to SVG with the real vega / vega-lite libraries, and SVG to PNG.
 *
 * vega 6 and vega-lite 6 are ES modules only. This package compiles to CommonJS, and jest's CommonJS
 * runtime can neither `require()` nor `import()` an ES module, so the rendering runs in a child Node
 * process: a small ES-module script (below) reads the specs as JSON on stdin and writes the SVGs as JSON
 * on stdout. The same path serves the CLI and the tests, at the cost of one Node start (~0.3 s) per
 * report, whatever the number of charts.
 */

export class ChartRenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChartRenderError';
  }
}

/** The child's program. Module paths arrive as arguments, so it does not depend on its working directory. */
const RENDERER =
  `
import { pathToFileURL } from 'node:url';
const [vegaPath, vegaLitePath] = process.argv.slice(1);
const vega = await import(pathToFileURL(vegaPath).href);
const vegaLite = await import(pathToFileURL(vegaLitePath).href);
let input = '';
for await (const chunk of process.stdin) input += chunk;
const specs = JSON.parse(input);
const svgs = [];
for (const [index, spec] of specs.entries()) {
  try {
    const compiled = vegaLite.compile(spec).spec;
    const view = new vega.View(vega.parse(compiled), { renderer: 'none', logLevel: vega.Warn });
    svgs.push(await view.toSVG());
    view.finalize();
  } catch (error) {
    process.stderr.write('chart ' + (index + 1) + ' of ' + specs.length + ': ' + ` +
  `String(error && error.message || error).split('\\n')[0] + '\\n');
    process.exit(1);
  }
}
process.stdout.write(JSON.stringify(svgs));
`;

/** One SVG document per spec, in order. */
export async function renderVegaLiteToSvg(
  specs: readonly VegaLiteSpec[],
  options: { timeoutMs?: number } = {},
): Promise<string[]> {
  if (specs.length === 0) return [];
  const args = ['--input-type=module', '--eval', RENDERER, '--', moduleEntry('vega'), moduleEntry('vega-lite')];
  const child = spawn(process.execPath, args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    timeout: options.timeoutMs ?? 120_000,
  });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  child.stdin.end(JSON.stringify(specs));
  const { code, signal } = await exit.catch((error: Error) => {
    throw new ChartRenderError(`could not start the chart renderer (${process.execPath}): ${error.message}`);
  });
  if (code !== 0) {
    const lastLine = Buffer.concat(stderr).toString('utf8').trim().split('\n').filter(Boolean).at(-1) ?? '';
    throw new ChartRenderError(
      `rendering ${specs.length} chart(s) with vega failed ` +
        `(${signal ? `signal ${signal}` : `exit ${code}`})${lastLine ? `: ${lastLine}` : ''}`,
    );
  }
  const svgs = JSON.parse(Buffer.concat(stdout).toString('utf8')) as unknown;
  if (
    !Array.isArray(svgs) ||
    svgs.length !== specs.length ||
    !svgs.every((svg) => typeof svg === 'string' && svg.startsWith('<svg'))
  ) {
    throw new ChartRenderError(`the chart renderer returned something other than ${specs.length} SVG document(s)`);
  }
  return svgs as string[];
}

/** Rasterises an SVG (e.g. one chart) to PNG at `scale` × its own size. System fonts are used for text. */
export function svgToPng(svg: string, options: { scale?: number } = {}): Buffer {
  const scale = options.scale ?? 2;
  const resvg = new Resvg(svg, {
    fitTo: { mode: 'zoom', value: scale },
    background: 'white',
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' },
  });
  return resvg.render().asPng();
}

/**
 * The file an ES-module-only package resolves to: its exports map has a `default` condition, which CommonJS resolution
 * accepts.
 */
function moduleEntry(name: 'vega' | 'vega-lite'): string {
  try {
    return require.resolve(name);
  } catch {
    throw new ChartRenderError(
      `the ${name} package is not installed: run npm install (rmqbench needs vega and vega-lite to draw charts)`,
    );
  }
}
