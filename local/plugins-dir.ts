/**
 * Local only: a plugins folder that holds just the applications a node runs (issue 24's faster start).
 *
 * Why: while it boots, a RabbitMQ 3.10 node reads the configuration schema of every application in its plugins folder
 * (RABBITMQ_PLUGINS_DIR), enabled or not, to translate rabbitmq.conf. Debian's package ships 71 applications there,
 * and that translation took 0.5-0.66 s of one core per node here (the prelaunch's "== Configuration ==" phase, logged
 * with RABBITMQ_LOG=debug; RabbitMQ 3.10.8, OTP 25.2.3). With a folder of only rabbit, the enabled plugins and the
 * applications they need (26 of the 71), the same phase took 0.09-0.12 s: about 1.4 s of CPU less for a 3-node
 * cluster that boots on two cores. The node runs the same code from the same files, through symbolic links.
 *
 * "The plugins directory location is determined by the RABBITMQ_PLUGINS_DIR environment variable"
 * (https://www.rabbitmq.com/docs/installing-plugins); Debian's is /usr/lib/rabbitmq/lib/rabbitmq_server-<version>/
 * plugins. Its paths must not hold `* ? ^ ! [ ] { }` (https://www.rabbitmq.com/docs/relocate).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

/** Debian's plugins folder for an installed RabbitMQ version, under its lib folder (/usr/lib/rabbitmq/lib). */
export function debianPluginsDir(libDir: string, rabbitmqVersion: string): string {
  return join(libDir, `rabbitmq_server-${rabbitmqVersion}`, 'plugins');
}

/**
 * The folders (name-version) in `pluginsDir` of the `roots` applications and of every application they need, by the
 * `applications` and `included_applications` of their .app files. Applications not in the folder (Erlang/OTP's own,
 * such as kernel or ssl) are left to the code path. Undefined when the folder holds .ez archives, whose .app files
 * this does not read: the node then keeps the whole folder.
 */
export function requiredPluginFolders(pluginsDir: string, roots: readonly string[]): string[] | undefined {
  const entries = readdirSync(pluginsDir);
  if (entries.some((entry) => entry.endsWith('.ez'))) return undefined;
  const folderOf = new Map<string, string>();
  for (const entry of entries) {
    const name = /^([a-z][a-zA-Z0-9_]*)-\d[^/]*$/.exec(entry)?.[1];
    if (name && !folderOf.has(name)) folderOf.set(name, entry);
  }
  const missing = roots.filter((root) => !folderOf.has(root));
  if (missing.length > 0) {
    throw new Error(`RabbitMQ plugin(s) ${missing.join(', ')} not found in ${pluginsDir}`);
  }
  const found = new Set<string>();
  const visit = (name: string): void => {
    const folder = folderOf.get(name);
    if (folder === undefined || found.has(folder)) return;
    found.add(folder);
    dependenciesOf(join(pluginsDir, folder, 'ebin', `${name}.app`)).forEach(visit);
  };
  roots.forEach(visit);
  return [...found].sort();
}

/**
 * The applications an .app file names in `applications` and `included_applications`
 * (https://www.erlang.org/doc/man/app.html); none when the file is missing.
 */
export function dependenciesOf(appFile: string): string[] {
  if (!existsSync(appFile)) return [];
  const text = readFileSync(appFile, 'utf8');
  const names: string[] = [];
  for (const match of text.matchAll(/\{\s*(?:applications|included_applications)\s*,\s*\[([^\]]*)\]/g)) {
    for (const item of match[1]!.split(',')) {
      const name = item.trim().replace(/^'(.*)'$/, '$1');
      if (name) names.push(name);
    }
  }
  return names;
}

/**
 * Creates `target` with a symbolic link to each folder `requiredPluginFolders` names; returns `target`, or undefined
 * when the node should keep the whole plugins folder (none at `pluginsDir`, or .ez archives in it).
 */
export function writeNodePluginsDir(target: string, pluginsDir: string, roots: readonly string[]): string | undefined {
  if (!existsSync(pluginsDir)) return undefined;
  const folders = requiredPluginFolders(pluginsDir, roots);
  if (folders === undefined) return undefined;
  mkdirSync(target, { recursive: true });
  for (const folder of folders) symlinkSync(join(pluginsDir, folder), join(target, folder));
  return target;
}
