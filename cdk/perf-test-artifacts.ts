/**
 * PerfTest 2.22.1 and its runtime dependencies, as Maven Central serves them.
 *
 * Maven Central publishes PerfTest as a thin jar (no uber-jar), so the load generator downloads the
 * 25 jars `mvn dependency:copy-dependencies` resolves for `com.rabbitmq:perf-test:2.22.1` and checks each
 * against the SHA-256 below before anything runs. Pinning every jar (rather than running Maven on the
 * instance) keeps the boot free of a dependency resolver and makes the whole classpath reproducible.
 * The checksums were computed from the artifacts downloaded from Maven Central, whose published SHA-1
 * files they matched.
 */
export const PERF_TEST_VERSION = '2.22.1';

export const MAVEN_CENTRAL_URL = 'https://repo1.maven.org/maven2';

export interface MavenArtifact {
  /** Path under the Maven repository root. */
  readonly path: string;
  readonly sha256: string;
}

export const PERF_TEST_ARTIFACTS: readonly MavenArtifact[] = [
  {
    path: 'org/hdrhistogram/HdrHistogram/2.2.2/HdrHistogram-2.2.2.jar',
    sha256: '22d1d4316c4ec13a68b559e98c8256d69071593731da96136640f864fa14fad8',
  },
  {
    path: 'org/latencyutils/LatencyUtils/2.0.3/LatencyUtils-2.0.3.jar',
    sha256: 'a32a9ffa06b2f4e01c5360f8f9df7bc5d9454a5d373cd8f361347fa5a57165ec',
  },
  {
    path: 'com/rabbitmq/amqp-client/5.23.0/amqp-client-5.23.0.jar',
    sha256: 'aa19c2f50c4404d7b2b97e192dd82dde0445ee3d2c602c343c5c722b4fdf404a',
  },
  {
    path: 'commons-cli/commons-cli/1.9.0/commons-cli-1.9.0.jar',
    sha256: 'd3d530d0f28fd0fbbffe2b0b338f70e8cb96f1605579e2e3abd4db29cac24e69',
  },
  {
    path: 'com/google/errorprone/error_prone_annotations/2.27.0/error_prone_annotations-2.27.0.jar',
    sha256: '24c923372c58e35d0b9f16a028929bb9aedc77521867c274f2bd0735df5ba1f5',
  },
  {
    path: 'com/google/code/gson/gson/2.11.0/gson-2.11.0.jar',
    sha256: '57928d6e5a6edeb2abd3770a8f95ba44dce45f3b23b7a9dc2b309c581552a78b',
  },
  {
    path: 'org/jgroups/jgroups/5.3.13.Final/jgroups-5.3.13.Final.jar',
    sha256: '55d86426ed741523dffc08f4c1a5ab1f2d693176ca399479b3f2e4e3fd3b0d4e',
  },
  {
    path: 'org/jgroups/kubernetes/jgroups-kubernetes/2.0.2.Final/jgroups-kubernetes-2.0.2.Final.jar',
    sha256: 'ac481cf2bb6230c3d57fb5701335b13976bcf1a95cbd211d05c319abd2a23db2',
  },
  {
    path: 'ch/qos/logback/logback-classic/1.3.14/logback-classic-1.3.14.jar',
    sha256: 'f9b07a6dba4df3899381df7e597df450134e1879b1f3a757456b3cd1c8d94e2f',
  },
  {
    path: 'ch/qos/logback/logback-core/1.3.14/logback-core-1.3.14.jar',
    sha256: '9f53159af18a9d438bc398c970db3bb7e17ddb07b04bbb3b01dfe3454dd18862',
  },
  {
    path: 'io/dropwizard/metrics/metrics-core/4.2.28/metrics-core-4.2.28.jar',
    sha256: '544e7c5828e9fe440e2e5b8b87974297352d8c0aac226a2614811600fd680463',
  },
  {
    path: 'io/dropwizard/metrics/metrics-jmx/4.2.28/metrics-jmx-4.2.28.jar',
    sha256: 'e529e50bc8d809e05ade6078254f1682348546545f6c3370151065b7ae958ed0',
  },
  {
    path: 'io/micrometer/micrometer-commons/1.14.1/micrometer-commons-1.14.1.jar',
    sha256: 'cce1da029abbde9fdac7cd0c853d611fd67c62c5da9e8b673179aa7ae4d1c9a1',
  },
  {
    path: 'io/micrometer/micrometer-core/1.14.1/micrometer-core-1.14.1.jar',
    sha256: 'e8a8af4456b074a96eb0bb623ac6ad021692d340847f6faef8f30b381c6a2817',
  },
  {
    path: 'io/micrometer/micrometer-observation/1.14.1/micrometer-observation-1.14.1.jar',
    sha256: '72bf1ae38cd80ededaf2351bd2bc185ade3134a454dff6742517df14e73ddbb4',
  },
  {
    path: 'io/micrometer/micrometer-registry-datadog/1.14.1/micrometer-registry-datadog-1.14.1.jar',
    sha256: '78cb8977f452f32139609d856e383d7afc59edd81a3baf486f03e6ce39dc2b13',
  },
  {
    path: 'io/micrometer/micrometer-registry-jmx/1.14.1/micrometer-registry-jmx-1.14.1.jar',
    sha256: '98b6a15140fd3b0809223013d159c4905e0a636bf826648876c7f0fc22f36e11',
  },
  {
    path: 'io/micrometer/micrometer-registry-prometheus/1.14.1/micrometer-registry-prometheus-1.14.1.jar',
    sha256: '82c73d756ff174fa1d36695c2ec49c7a506e62868f9f6ff55f3f7631d32ea536',
  },
  {
    path: 'com/rabbitmq/perf-test/2.22.1/perf-test-2.22.1.jar',
    sha256: '57b2057b56f582e88bd5f89a2c7c4507139b48bfb80a23b5e12809f31aba8acf',
  },
  {
    path: 'io/prometheus/prometheus-metrics-config/1.3.3/prometheus-metrics-config-1.3.3.jar',
    sha256: '1b619be29b1a02a53615665226c2d2e0a84e53a7368311fc5921837d824aeeeb',
  },
  {
    path: 'io/prometheus/prometheus-metrics-core/1.3.3/prometheus-metrics-core-1.3.3.jar',
    sha256: '7fd5f0412c3582ffc2acc8bf391c2730c97e76337c11f207948f1496057d6d6d',
  },
  {
    path: 'io/prometheus/prometheus-metrics-exposition-formats/1.3.3/prometheus-metrics-exposition-formats-1.3.3.jar',
    sha256: '38db66d2d97fa824ee708ddaeb3a358b1b920ec0af5afd8e66d1d9e10017473f',
  },
  {
    path: 'io/prometheus/prometheus-metrics-model/1.3.3/prometheus-metrics-model-1.3.3.jar',
    sha256: 'ca7eedab2b0098ab1b1ef1973271df70ddc5d0b7b32adf6a4a04481e7618b571',
  },
  {
    path: 'io/prometheus/prometheus-metrics-tracer-common/1.3.3/prometheus-metrics-tracer-common-1.3.3.jar',
    sha256: '72c850edd9d048cb31c1f4906f832706f18ac6db6d8bc791d49da6aaee2249b3',
  },
  {
    path: 'org/slf4j/slf4j-api/2.0.16/slf4j-api-2.0.16.jar',
    sha256: 'a12578dde1ba00bd9b816d388a0b879928d00bab3c83c240f7013bf4196c579a',
  },
];
