/**
 * Jest globalSetup/globalTeardown: every test run gets one temporary folder as TMPDIR (os.tmpdir() reads it on each
 * call, and the workers Jest forks afterwards inherit it), removed when the run ends, so that the temporary folders
 * of tests, of CDK apps synthesized without an outdir (cdk.out*) and of the tools they start do not pile up in /tmp.
 * RMQBENCH_SYSTEM_TMPDIR keeps the system's folder for what must outlive a killed run (test/simulated-vm/harness.ts).
 */
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

module.exports.setup = async () => {
  process.env.RMQBENCH_SYSTEM_TMPDIR = tmpdir();
  const dir = mkdtempSync(join(tmpdir(), 'rmqbench-tests-'));
  process.env.RMQBENCH_TEST_TMPDIR = dir;
  process.env.TMPDIR = dir;
};

module.exports.teardown = async () => {
  const dir = process.env.RMQBENCH_TEST_TMPDIR;
  if (dir) rmSync(dir, { recursive: true, force: true });
};
