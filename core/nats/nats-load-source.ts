import { createHash } from 'node:crypto';

/**
 * Which files of rmqbench's NATS load client (local/nats-load/) its build needs, and the hash that names a build of
 * them: the local target's cache folder (local/nats-binaries.ts) and the cloud load generator's build folder
 * (lambdas/shared/nats-load-generator.ts) are both named by it, so one source builds once in each place.
 */

/** go.mod, go.sum and the Go files, tests left out. */
export function isNatsLoadSourceFile(name: string): boolean {
  return name === 'go.mod' || name === 'go.sum' || (name.endsWith('.go') && !name.endsWith('_test.go'));
}

/** The first 12 hex digits of a SHA-256 over the files' names and contents, in name order. */
export function natsLoadSourceHash(files: Readonly<Record<string, Buffer>>): string {
  const hash = createHash('sha256');
  for (const name of Object.keys(files).sort()) hash.update(`${name}\0`).update(files[name]!).update('\0');
  return hash.digest('hex').slice(0, 12);
}
