import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** cfn-lint's copy of the CloudFormation registry schemas (installed into .venv-tools by scripts/setup.sh). */
function cfnLintSchemasDir(): string {
  const lib = resolve(__dirname, '../../.venv-tools/lib');
  const python = readdirSync(lib).find((name) => name.startsWith('python'));
  if (!python)
    throw new Error(`no python folder under ${lib}: run scripts/setup.sh (it installs cfn-lint into .venv-tools)`);
  return join(lib, python, 'site-packages/cfnlint/data/schemas');
}

type Handlers = Partial<Record<'create' | 'read' | 'update' | 'delete' | 'list', { permissions?: string[] }>>;

/**
 * The create, read, update and delete handler permissions of each resource type, from the registry schemas
 * (providers/<region>.json maps a type name to the schema file resources/<hash>.json).
 */
export function handlerPermissions(resourceTypes: Iterable<string>, region = 'us-east-1'): Map<string, string[]> {
  const dir = cfnLintSchemasDir();
  const index = JSON.parse(readFileSync(join(dir, 'providers', `${region}.json`), 'utf8')) as Record<string, string>;
  const result = new Map<string, string[]>();
  for (const type of resourceTypes) {
    const hash = index[type];
    if (!hash) throw new Error(`${type} has no registry schema in cfn-lint's ${region} index`);
    const schema = JSON.parse(readFileSync(join(dir, 'resources', `${hash}.json`), 'utf8')) as {
      typeName: string;
      handlers?: Handlers;
    };
    if (schema.typeName !== type) throw new Error(`schema ${hash} is ${schema.typeName}, not ${type}`);
    const handlers = schema.handlers ?? {};
    result.set(
      type,
      (['create', 'read', 'update', 'delete'] as const).flatMap((name) => handlers[name]?.permissions ?? []),
    );
  }
  return result;
}
