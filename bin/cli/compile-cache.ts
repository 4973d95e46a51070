/**
 * Node's compile cache for the CLI's modules: later starts read V8's code cache from disk instead of compiling the
 * CLI's modules again (0.1 CPU s of each start, measured here; a `run` spends it while its cluster boots).
 * `module.enableCompileCache()` without a folder, as Node recommends: os.tmpdir()/node-compile-cache, or
 * NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off; it never throws
 * (https://nodejs.org/docs/latest-v22.x/api/module.html#moduleenablecompilecachecachedir, since v22.8.0, hence the
 * check on older 22s). bin/rmqbench.ts imports this module first, so that it is on before the others load.
 */
import * as nodeModule from 'node:module';

if (typeof nodeModule.enableCompileCache === 'function') nodeModule.enableCompileCache();
