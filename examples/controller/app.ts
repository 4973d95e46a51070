import { buildControllerApp } from './controller-app';

// `cdk deploy` (from this folder) runs this; `cdk synth` sets CDK_OUTDIR itself.
buildControllerApp({ outdir: process.env.CDK_OUTDIR ?? 'cdk.out' }).synth();
