import { buildExampleApp } from './example-app';

// `npm run synth` runs this from the package root; `cdk synth` sets CDK_OUTDIR itself.
buildExampleApp(process.env.CDK_OUTDIR ?? 'cdk.out').synth();
