import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { debianPluginsDir, dependenciesOf, requiredPluginFolders, writeNodePluginsDir } from '../../local/plugins-dir';
import { installedRabbitmqVersion } from '../../local/rabbitmq-cluster';

const RABBITMQ_LIB = '/usr/lib/rabbitmq/lib';

describe('a plugins folder of only the applications a node runs', () => {
  let dir: string;
  /** An application folder `name-version` with an .app file naming `applications` and `included`. */
  const app = (folder: string, applications: string[], included: string[] = []) => {
    const name = folder.replace(/-\d.*$/, '');
    mkdirSync(join(dir, folder, 'ebin'), { recursive: true });
    writeFileSync(
      join(dir, folder, 'ebin', `${name}.app`),
      `{application, '${name}', [\n\t{vsn, "1"},\n\t{modules, ['${name}_app']},\n` +
        `\t{applications, [${applications.join(',')}]},\n\t{included_applications, [${included.join(', ')}]}\n]}.\n`,
    );
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'plugins-dir-'));
    app('rabbit-3.10.8', ['kernel', 'stdlib', 'ra', "'quoted_app'"]);
    app('ra-2.2.0', ['kernel', 'gen_batch_server'], ['aten']);
    app('gen_batch_server-0.8.8', ['kernel']);
    app('aten-0.5.8', []);
    app('quoted_app-1.0.0', ['kernel']);
    app('rabbitmq_web_stomp-3.10.8', ['rabbit', 'cowboy']);
    app('cowboy-2.8.0', ['cowlib']);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('the closure of the roots over applications and included_applications, quoted atoms too', () => {
    expect(requiredPluginFolders(dir, ['rabbit'])).toEqual([
      'aten-0.5.8',
      'gen_batch_server-0.8.8',
      'quoted_app-1.0.0',
      'ra-2.2.0',
      'rabbit-3.10.8',
    ]);
    expect(dependenciesOf(join(dir, 'ra-2.2.0', 'ebin', 'ra.app'))).toEqual(['kernel', 'gen_batch_server', 'aten']);
  });

  test('an enabled plugin that is not installed is named', () => {
    expect(() => requiredPluginFolders(dir, ['rabbit', 'rabbitmq_stream'])).toThrow(
      `RabbitMQ plugin(s) rabbitmq_stream not found in ${dir}`,
    );
  });

  test('a folder with .ez archives, or no folder at all, is kept whole (undefined)', () => {
    expect(writeNodePluginsDir(join(dir, 'trimmed'), join(dir, 'absent'), ['rabbit'])).toBeUndefined();
    writeFileSync(join(dir, 'rabbitmq_x-1.0.0.ez'), '');
    expect(requiredPluginFolders(dir, ['rabbit'])).toBeUndefined();
  });

  test('the node folder links each required application to the installed one', () => {
    const target = writeNodePluginsDir(join(dir, 'node-plugins'), dir, ['rabbit'])!;
    expect(readdirSync(target).sort()).toEqual(requiredPluginFolders(dir, ['rabbit']));
    expect(readlinkSync(join(target, 'ra-2.2.0'))).toBe(join(dir, 'ra-2.2.0'));
  });

  test("Debian's installed RabbitMQ: rabbit and the management plugin need some of its applications", () => {
    const pluginsDir = debianPluginsDir(RABBITMQ_LIB, installedRabbitmqVersion()!);
    const folders = requiredPluginFolders(pluginsDir, ['rabbit', 'rabbitmq_management'])!;
    const names = folders.map((folder) => folder.replace(/-\d.*$/, ''));
    expect(names).toEqual(
      expect.arrayContaining(['rabbit', 'rabbit_common', 'rabbitmq_prelaunch', 'rabbitmq_management_agent', 'ra']),
    );
    expect(names).not.toContain('rabbitmq_web_stomp');
    expect(folders.length).toBeLessThan(readdirSync(pluginsDir).length);
  });
});
