import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { buildControllerApp, CONTROLLER_OUTPUTS } from '../../examples/controller/controller-app';
import { adoptAzureAssembly, givenSecretArn } from '../twin/azure/given-assembly';

const CFN_LINT = resolve(__dirname, '../../.venv-tools/bin/cfn-lint');
const CFN_LINT_ERRORS = 2;

type Template = {
  Outputs?: Record<string, unknown>;
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
};

describe('examples/controller: the deployable controller app', () => {
  const dirs: string[] = [];
  const synth = (context?: Record<string, string>) => {
    const outdir = mkdtempSync(join(tmpdir(), 'rmqbench-controller-app-'));
    dirs.push(outdir);
    buildControllerApp({ outdir, ...(context ? { context } : {}) }).synth();
    const file = readdirSync(outdir).find((name) => name === 'RmqbenchController.template.json')!;
    return {
      outdir,
      path: join(outdir, file),
      template: JSON.parse(readFileSync(join(outdir, file), 'utf8')) as Template,
    };
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  test(
    'synthesizes with cdk-nag AwsSolutions on (an unacknowledged finding fails synthesis) and outputs what a ' +
      'run needs',
    () => {
      const { template } = synth();
      expect(Object.keys(template.Outputs ?? {})).toEqual(expect.arrayContaining(Object.values(CONTROLLER_OUTPUTS)));
      // AWS only by default: no Azure template asset, no credentials secret read.
      expect(JSON.stringify(template)).not.toContain('AZURE_');
    },
    180_000,
  );

  test('the S3 gateway endpoint keeps load-generator uploads and Amazon Linux repositories off the NAT gateway', () => {
    const { template } = synth();
    const endpoints = Object.values(template.Resources).filter((resource) => resource.Type === 'AWS::EC2::VPCEndpoint');
    expect(
      endpoints.map((endpoint) => [
        endpoint.Properties!.VpcEndpointType,
        JSON.stringify(endpoint.Properties!.ServiceName),
      ]),
    ).toEqual([['Gateway', expect.stringContaining('.s3')]]);
    // What bills by the hour while no run is active: one NAT gateway and its Elastic IP (README "Benchmark in the
    // cloud").
    const hourly = Object.values(template.Resources).filter(
      (resource) =>
        ['AWS::EC2::NatGateway', 'AWS::EC2::EIP', 'AWS::EC2::Instance', 'AWS::EC2::VPCEndpoint'].includes(
          resource.Type,
        ) && !(resource.Type === 'AWS::EC2::VPCEndpoint' && resource.Properties!.VpcEndpointType === 'Gateway'),
    );
    expect(hourly.map((resource) => resource.Type).sort()).toEqual(['AWS::EC2::EIP', 'AWS::EC2::NatGateway']);
  }, 180_000);

  test('Azure is enabled by context: the credentials secret ARN, location and compiled template', () => {
    const templateFile = join(mkdtempSync(join(tmpdir(), 'rmqbench-arm-')), 'main.json');
    dirs.push(dirname(templateFile));
    writeFileSync(
      templateFile,
      JSON.stringify({
        $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
        contentVersion: '1.0.0.0',
        resources: [],
      }),
    );
    const given = 'arn:aws:secretsmanager:eu-west-1:111111111111:secret:rmqbench-azure-AbCdEf';
    const { template, outdir } = synth({
      azureCredentialsSecretArn: given,
      azureLocation: 'northeurope',
      azureTemplateFile: templateFile,
    });
    const text = JSON.stringify(template);
    expect(text).toContain('northeurope');
    expect(text).toContain('rmqbench-azure-AbCdEf');
    // The Azure twin's --cdk-out (test/twin/azure/given-assembly.ts) deploys a copy with its own secret's ARN.
    const twinArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:rmqbench/azure-service-principal-Tw1nAb';
    const copy = mkdtempSync(join(tmpdir(), 'rmqbench-given-'));
    dirs.push(copy);
    expect(givenSecretArn(outdir)).toBe(given);
    expect(adoptAzureAssembly(outdir, copy, twinArn)).toBe(given);
    const templateName = readdirSync(copy).find((file) => file.endsWith('.template.json'))!;
    const adopted = readFileSync(join(copy, templateName), 'utf8');
    const original = readFileSync(join(outdir, templateName), 'utf8');
    expect(adopted).not.toContain(given);
    expect(adopted.split(twinArn).length).toBe(original.split(given).length);
    expect(original.split(given).length).toBeGreaterThan(2);
    expect(readdirSync(copy).sort()).toEqual(readdirSync(outdir).sort());
  }, 180_000);

  test('a fault-only service principal by context: only the fault function reads its secret', () => {
    const templateFile = join(mkdtempSync(join(tmpdir(), 'rmqbench-arm-')), 'main.json');
    dirs.push(dirname(templateFile));
    writeFileSync(templateFile, JSON.stringify({ contentVersion: '1.0.0.0', resources: [] }));
    const faultArn = 'arn:aws:secretsmanager:eu-west-1:111111111111:secret:rmqbench-azure-fault-QwErTy';
    const { template } = synth({
      azureCredentialsSecretArn: 'arn:aws:secretsmanager:eu-west-1:111111111111:secret:rmqbench-azure-AbCdEf',
      azureTemplateFile: templateFile,
      azureFaultCredentialsSecretArn: faultArn,
      azureFaultPrincipalId: '00000000-0000-0000-0000-0000000000f0',
    });
    const functions = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    const readers = functions.filter(([, r]) => JSON.stringify(r.Properties).includes(faultArn));
    expect(readers.map(([id]) => id)).toEqual([expect.stringMatching(/^ControllerFaultFunction/)]);
    expect(JSON.stringify(template)).toContain('00000000-0000-0000-0000-0000000000f0');
  }, 180_000);

  test("the synthesized template has no cfn-lint error or warning (but CDK's redundant DependsOn, W3005)", () => {
    if (!existsSync(CFN_LINT)) throw new Error(`cfn-lint is not installed at ${CFN_LINT}: run scripts/setup.sh`);
    const { path } = synth();
    // W3005 only: CDK's explicit DependsOn from each function to its role's policy, which cfn-lint finds redundant.
    const lint = spawnSync(CFN_LINT, ['--format', 'parseable', '--ignore-checks', 'W3005', '--', path], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (lint.error) throw lint.error;
    const status = lint.status ?? -1;
    if (status < 0 || status & CFN_LINT_ERRORS)
      throw new Error(`cfn-lint exited with ${status}:\n${lint.stdout}${lint.stderr}`);
    expect(lint.stdout.trim()).toBe('');
  }, 180_000);
});
