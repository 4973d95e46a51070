/**
 * `npm run twin -- --target azure --cdk-out DIR`: a reviewer's cloud assembly, synthesized with Azure on, deployed
 * into the Azure twin. The assembly names the service principal's secret by the complete ARN it was synthesized with
 * (examples/controller reads `azureCredentialsSecretArn` and calls `Secret.fromSecretCompleteArn`, so the ARN is a
 * literal in the functions' environment and the roles' policies); the twin creates its own secret first (its ARN ends
 * in a random suffix Secrets Manager chooses, which no one can give in advance), so it deploys a copy of the assembly
 * with its own ARN in place of the given one, and leaves the reviewer's folder untouched.
 */
import { cpSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A complete Secrets Manager ARN: partition, region, 12-digit account, `secret:`, the name, `-` and the six characters
 * Secrets Manager appends (https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_iam-permissions.html
 * "A complete ARN ... ends with a hyphen and six random characters").
 */
const COMPLETE_SECRET_ARN =
  /arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+?-[A-Za-z0-9]{6}\b/g;

/** The assembly's CloudFormation templates (`*.template.json`), the only files that carry the ARN. */
function templateFiles(cdkOut: string): string[] {
  return readdirSync(cdkOut)
    .filter((file) => file.endsWith('.template.json') && statSync(join(cdkOut, file)).isFile())
    .map((file) => join(cdkOut, file));
}

/** The one secret ARN the assembly's templates name, or an error that says what was found instead. */
export function givenSecretArn(cdkOut: string): string {
  const found = new Set<string>();
  for (const file of templateFiles(cdkOut)) {
    for (const match of readFileSync(file, 'utf8').matchAll(COMPLETE_SECRET_ARN)) found.add(match[0]);
  }
  if (found.size === 1) return [...found][0]!;
  if (found.size === 0)
    throw new Error(
      `twin: the cloud assembly ${cdkOut} names no Secrets Manager secret: synthesize examples/controller with ` +
        '-c azureCredentialsSecretArn=<a complete secret ARN> for --target azure',
    );
  throw new Error(
    `twin: the cloud assembly ${cdkOut} names ${found.size} secrets (${[...found].join(', ')}); ` +
      'the Azure twin replaces one, the service principal secret given as azureCredentialsSecretArn',
  );
}

/**
 * Copies the assembly at `given` into `into` (a new folder), with `secretArn` in place of the secret ARN it was
 * synthesized with in every template. Returns the ARN replaced.
 */
export function adoptAzureAssembly(given: string, into: string, secretArn: string): string {
  const original = givenSecretArn(given);
  cpSync(given, into, { recursive: true });
  for (const file of templateFiles(into)) {
    writeFileSync(file, readFileSync(file, 'utf8').split(original).join(secretArn));
  }
  return original;
}
