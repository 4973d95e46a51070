import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/**
 * Local only (issue 24's faster start): an application class-data sharing (AppCDS) archive for DynamoDB Local, which
 * every CLI command that opens the local store starts, beside the RabbitMQ nodes on the same cores. Mapping its
 * classes from the archive instead of loading, parsing and verifying them from 85 jars halves the CPU it spends until
 * it listens (measured here on 2026-11-28, DynamoDB Local 2.6.1 on OpenJDK 17.0.15: 2.05-2.23 -> 1.02-1.27 CPU s,
 * 2.7-3.1 -> 1.5-1.9 s).
 *
 * How (https://docs.oracle.com/en/java/javase/17/vm/class-data-sharing.html, "Application Class-Data Sharing"):
 * a training run lists the classes it loads (`-XX:DumpLoadedClassList`), `-Xshare:dump` writes the archive of them,
 * and later runs map it (`-XX:SharedArchiveFile`, with `-Xshare:auto`: an archive this JVM cannot use, from another
 * JDK or another class path, is ignored with a warning in DynamoDB Local's log, and it starts as before).
 *
 * Why a copy of DynamoDB Local's jar: its manifest's Class-Path starts with `.`, the jar's own folder, and a CDS
 * archive refuses a non-empty folder on its class path ("Cannot have non-empty directory in paths"; the JDK 17
 * static dump fails on it). The copy is the same jar without its manifest (`zip -d`): nothing reads that manifest
 * when the main class is named on the command line, and the other Class-Path entries (DynamoDBLocal_lib/...) name
 * files that the Maven artifact's folder does not have. The class path is then every jar, listed in a fixed order,
 * because the archive is valid only for the class path it was dumped with.
 *
 * `rmqbench doctor --fix` (run by scripts/setup.sh) prepares it once per machine; without it, DynamoDB Local starts
 * from the original jars, as before.
 */

/** The folder, inside DynamoDB Local's cached artifact folder, that holds the jar's copy and the archive. */
export const DYNAMODB_LOCAL_CDS_FOLDER = 'rmqbench-cds';
const ARCHIVE = 'dynamodb-local.jsa';
const CLASS_LIST = 'dynamodb-local.classlist';
const MAIN_JAR = /^DynamoDBLocal-[\d.]+\.jar$/;

/** The JVM arguments that choose DynamoDB Local's class path (and its archive, once prepared) in `libDir`. */
export function dynamoDbLocalClassArgs(libDir: string): string[] {
  const classPath = preparedClassPath(libDir);
  if (classPath === undefined) return ['-cp', join(libDir, '*')];
  return [
    '-Xshare:auto',
    `-XX:SharedArchiveFile=${join(libDir, DYNAMODB_LOCAL_CDS_FOLDER, ARCHIVE)}`,
    '-cp',
    classPath,
  ];
}

/** Whether `libDir` holds a prepared archive. */
export function hasDynamoDbLocalArchive(libDir: string): boolean {
  return preparedClassPath(libDir) !== undefined;
}

/** The archive's class path when both the jar's copy and the archive exist; undefined before. */
function preparedClassPath(libDir: string): string | undefined {
  const classPath = archivedClassPath(libDir);
  return classPath !== undefined && existsSync(join(libDir, DYNAMODB_LOCAL_CDS_FOLDER, ARCHIVE))
    ? classPath
    : undefined;
}

/** The copy of the main jar first, then every other jar of `libDir` by name; undefined before the copy exists. */
function archivedClassPath(libDir: string): string | undefined {
  const jars = readdirSync(libDir)
    .filter((name) => name.endsWith('.jar'))
    .sort();
  const main = jars.find((name) => MAIN_JAR.test(name));
  if (main === undefined) return undefined;
  const copy = join(libDir, DYNAMODB_LOCAL_CDS_FOLDER, main);
  if (!existsSync(copy)) return undefined;
  return [copy, ...jars.filter((name) => name !== main).map((name) => join(libDir, name))].join(':');
}

/**
 * Prepares the archive in `libDir`: the jar's copy without its manifest, a training run (`train`, given the JVM
 * arguments to start DynamoDB Local with: it must start it, use it and stop it), then the dump. Written under
 * temporary names and moved into place when complete, so that a run never maps a half-written archive. Throws with
 * the step that failed; what it leaves behind is removed.
 */
export async function prepareDynamoDbLocalArchive(
  libDir: string,
  train: (jvmArgs: readonly string[]) => Promise<void>,
): Promise<string> {
  const folder = join(libDir, DYNAMODB_LOCAL_CDS_FOLDER);
  const archive = join(folder, ARCHIVE);
  const main = readdirSync(libDir).find((name) => MAIN_JAR.test(name));
  if (main === undefined) throw new Error(`no DynamoDBLocal-<version>.jar in ${libDir}`);
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  try {
    const partialJar = join(folder, `${main}.partial`);
    copyFileSync(join(libDir, main), partialJar);
    await run('zip', ['-q', '-d', partialJar, 'META-INF/MANIFEST.MF'], 'removing the manifest from the jar copy');
    renameSync(partialJar, join(folder, main));
    const classList = join(folder, CLASS_LIST);
    const classPath = archivedClassPath(libDir)!;
    await train([`-XX:DumpLoadedClassList=${classList}`, '-cp', classPath]);
    if (!existsSync(classList)) throw new Error('the training run wrote no class list');
    const partialArchive = `${archive}.partial`;
    await run(
      'java',
      ['-Xshare:dump', `-XX:SharedClassListFile=${classList}`, `-XX:SharedArchiveFile=${partialArchive}`],
      'dumping the archive',
      classPath,
    );
    renameSync(partialArchive, archive);
    rmSync(classList, { force: true });
    return archive;
  } catch (error) {
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
}

async function run(command: string, args: string[], step: string, classPath?: string): Promise<void> {
  try {
    await execFileAsync(command, classPath === undefined ? args : [...args, '-cp', classPath], {
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    const tail = (stderr ?? '').trim().split('\n').slice(-3).join(' | ');
    throw new Error(`DynamoDB Local's class archive: ${step} failed: ${tail || message}`);
  }
}
