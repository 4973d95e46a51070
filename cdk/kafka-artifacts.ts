import type { MavenArtifact } from './perf-test-artifacts';

/**
 * Kafka 4.3.1 (broker and tools) and its runtime dependencies, as Maven Central serves them.
 *
 * The same 92 jars the local target runs (local/maven-artifacts.ts KAFKA_ARTIFACT: `mvn dependency:copy-dependencies`
 * of org.apache.kafka:kafka_2.13:4.3.1, org.apache.kafka:kafka-tools:4.3.1 and
 * org.apache.logging.log4j:log4j-slf4j-impl:2.25.4), so the brokers on EC2 run the classpath the local tests exercise.
 * Each broker downloads them and checks every one against the SHA-256 below before anything runs.
 * The checksums were computed from the jars Maven downloaded from Maven Central into the local repository, each of
 * which matched the SHA-1 file Maven Central publishes beside it; test/cdk/kafka-artifacts.test.ts compares this list
 * with the local cache whenever the cache holds the Kafka jars.
 */
export const KAFKA_VERSION_ON_AWS = '4.3.1';

export const KAFKA_ARTIFACTS: readonly MavenArtifact[] = [
  {
    path: 'org/hdrhistogram/HdrHistogram/2.2.2/HdrHistogram-2.2.2.jar',
    sha256: '22d1d4316c4ec13a68b559e98c8256d69071593731da96136640f864fa14fad8',
  },
  {
    path: 'javax/activation/activation/1.1.1/activation-1.1.1.jar',
    sha256: 'ae475120e9fcd99b4b00b38329bd61cdc5eb754eee03fe66c01f50e137724f99',
  },
  {
    path: 'org/glassfish/hk2/external/aopalliance-repackaged/3.0.6/aopalliance-repackaged-3.0.6.jar',
    sha256: 'a82b6d1a348324ef88dc807c7cd7aaf633985cbff7b30036fb61a1b86981d840',
  },
  {
    path: 'net/sourceforge/argparse4j/argparse4j/0.7.0/argparse4j-0.7.0.jar',
    sha256: '65ceb669d88f63306c680f8088bbf765bbca72d288a61a03703000076c3d3f56',
  },
  {
    path: 'com/github/ben-manes/caffeine/caffeine/3.2.0/caffeine-3.2.0.jar',
    sha256: 'ec411dfdf0c03f25218648ce89861630b71680e5858a9a7278ebac8e55cab3d7',
  },
  {
    path: 'io/github/classgraph/classgraph/4.8.179/classgraph-4.8.179.jar',
    sha256: '16558357f234052370109127a45d69a9bd6d8646925594792634486dc48b159d',
  },
  {
    path: 'commons-beanutils/commons-beanutils/1.11.0/commons-beanutils-1.11.0.jar',
    sha256: '9e44ba68ec9a3f21286fa2a8bbb003b735c0f69101bb43144b79f4f8aaa74709',
  },
  {
    path: 'commons-collections/commons-collections/3.2.2/commons-collections-3.2.2.jar',
    sha256: 'eeeae917917144a68a741d4c0dff66aa5c5c5fd85593ff217bced3fc8ca783b8',
  },
  {
    path: 'commons-digester/commons-digester/2.1/commons-digester-2.1.jar',
    sha256: 'e0b2b980a84fc6533c5ce291f1917b32c507f62bcad64198fff44368c2196a3d',
  },
  {
    path: 'commons-logging/commons-logging/1.3.5/commons-logging-1.3.5.jar',
    sha256: '6d7a744e4027649fbb50895df9497d109f98c766a637062fe8d2eabbb3140ba4',
  },
  {
    path: 'commons-validator/commons-validator/1.10.1/commons-validator-1.10.1.jar',
    sha256: 'ed74711a78d793ca37f6075e4a1e93d107233dfd20d0bb17e32bad88d38e56aa',
  },
  {
    path: 'org/apache/kafka/connect-api/4.3.1/connect-api-4.3.1.jar',
    sha256: '5ce6158d453d2d84ab3509260fff872c67fb532a51519da6acafc6835bc48cfe',
  },
  {
    path: 'org/apache/kafka/connect-json/4.3.1/connect-json-4.3.1.jar',
    sha256: 'ebd6d4900eb6835f30c6ce74b5f6d4a4fdc19e0a4a1de8da2f4463ea3ef20e41',
  },
  {
    path: 'org/apache/kafka/connect-runtime/4.3.1/connect-runtime-4.3.1.jar',
    sha256: '9df3d2f78f8a1740af358dd78ccdf1396559223e0cfbf1a697ab9363dead6175',
  },
  {
    path: 'org/apache/kafka/connect-transforms/4.3.1/connect-transforms-4.3.1.jar',
    sha256: '060bb300977304b53f9aebe79a3298c06a3d4240cb58b01e06eaa75abf4168eb',
  },
  {
    path: 'com/dynatrace/hash4j/hash4j/0.22.0/hash4j-0.22.0.jar',
    sha256: '23028a3fd006e530bf495f551083208187cafd8f80624d048eba56442f16a50e',
  },
  {
    path: 'org/glassfish/hk2/hk2-api/3.0.6/hk2-api-3.0.6.jar',
    sha256: 'c049a21a9fd9316c7e291a2bc28835f70d25affb623dc1599a83b6b84ec83a4f',
  },
  {
    path: 'org/glassfish/hk2/hk2-locator/3.0.6/hk2-locator-3.0.6.jar',
    sha256: 'e2664d21b017c3aa1518b913264602bea604edc54d356103c10afba99abd04fc',
  },
  {
    path: 'org/glassfish/hk2/hk2-utils/3.0.6/hk2-utils-3.0.6.jar',
    sha256: 'fc84d85a0744b576d9ec7db5845eeb998ed532a9450dd19c8c922c3ee6926206',
  },
  {
    path: 'com/fasterxml/jackson/core/jackson-annotations/2.21/jackson-annotations-2.21.jar',
    sha256: '53ca085f4a150f703f49e1aabd935bd03b43e1ea3d55d135438292af22cef56b',
  },
  {
    path: 'com/fasterxml/jackson/core/jackson-core/2.21.2/jackson-core-2.21.2.jar',
    sha256: '12e8655b100267b44d0f14d01b1f5082a5105e616174dc4307be1a761e92407b',
  },
  {
    path: 'com/fasterxml/jackson/core/jackson-databind/2.21.2/jackson-databind-2.21.2.jar',
    sha256: '8c982f01f148d805f0aaac2339011244757e0df7c6ff8951f2fa3f433b8ed849',
  },
  {
    path: 'com/fasterxml/jackson/dataformat/jackson-dataformat-csv/2.21.2/jackson-dataformat-csv-2.21.2.jar',
    sha256: '682f8c7977e02a42748426bf54946e32e52e2f80b84b6642801ab12bd541368a',
  },
  {
    path: 'com/fasterxml/jackson/dataformat/jackson-dataformat-yaml/2.21.2/jackson-dataformat-yaml-2.21.2.jar',
    sha256: 'd25551812fa0c14f37cabaa9401e63eadcea42ce36311183af5622d5bc8a1bc7',
  },
  {
    path: 'com/fasterxml/jackson/datatype/jackson-datatype-jdk8/2.21.2/jackson-datatype-jdk8-2.21.2.jar',
    sha256: 'e581bbf3fc5622d16b57366dd41e10fc56921fb202879de2ef487f87dd9b30e7',
  },
  {
    path: 'com/fasterxml/jackson/jakarta/rs/jackson-jakarta-rs-base/2.21.2/jackson-jakarta-rs-base-2.21.2.jar',
    sha256: '40f4c57a2e6f34505338da188724e7ace7b343dde3964b76a12c993cdedad1af',
  },
  {
    path:
      'com/fasterxml/jackson/jakarta/rs/jackson-jakarta-rs-json-provider/2.21.2/' +
      'jackson-jakarta-rs-json-provider-2.21.2.jar',
    sha256: 'ca969ea798efedc4b56589505fab51eb69c11a361b2e7583855593fc8690a666',
  },
  {
    path: 'com/fasterxml/jackson/module/jackson-module-blackbird/2.21.2/jackson-module-blackbird-2.21.2.jar',
    sha256: '5ed62cdcd357a24b73de9280e167aa014d7b4c17d04823844d482274cf07097e',
  },
  {
    path:
      'com/fasterxml/jackson/module/jackson-module-jakarta-xmlbind-annotations/2.21.2/' +
      'jackson-module-jakarta-xmlbind-annotations-2.21.2.jar',
    sha256: 'f507551c823b137c8487275fc171652a78a4f083732e349e1d3cb42e568dd7e4',
  },
  {
    path: 'com/sun/activation/jakarta.activation/2.0.1/jakarta.activation-2.0.1.jar',
    sha256: 'b9e24b7dd6e07495562ea96531be3130c96dba4d78e1dfd88adbbdebf4332871',
  },
  {
    path: 'jakarta/activation/jakarta.activation-api/2.1.0/jakarta.activation-api-2.1.0.jar',
    sha256: '56e8d994095fe49c28138c60291482f66f18d12ac2b720e938697dce6a3135c7',
  },
  {
    path: 'jakarta/annotation/jakarta.annotation-api/2.1.1/jakarta.annotation-api-2.1.1.jar',
    sha256: '5f65fdaf424eee2b55e1d882ba9bb376be93fb09b37b808be6e22e8851c909fe',
  },
  {
    path: 'jakarta/inject/jakarta.inject-api/2.0.1/jakarta.inject-api-2.0.1.jar',
    sha256: 'f7dc98062fccf14126abb751b64fab12c312566e8cbdc8483598bffcea93af7c',
  },
  {
    path: 'jakarta/servlet/jakarta.servlet-api/6.0.0/jakarta.servlet-api-6.0.0.jar',
    sha256: 'c034eb1afb158987dbb53a5fea0cadf611c8dae8daadd59c44d9d5ab70129cef',
  },
  {
    path: 'jakarta/validation/jakarta.validation-api/3.0.2/jakarta.validation-api-3.0.2.jar',
    sha256: '291c25e6910cc6a7ebd96d4c6baebf6d7c37676c5482c2d96146e901b62c1fc9',
  },
  {
    path: 'jakarta/ws/rs/jakarta.ws.rs-api/3.1.0/jakarta.ws.rs-api-3.1.0.jar',
    sha256: '6b3b3628b8b4aedda0d24c3354335e985497d8ef3c510b8f3028e920d5b8663d',
  },
  {
    path: 'jakarta/xml/bind/jakarta.xml.bind-api/3.0.1/jakarta.xml.bind-api-3.0.1.jar',
    sha256: 'b8fb4bee3ff5b5c1ef77144d8411316018d7bbd41fcf1ede0646f7978546b867',
  },
  {
    path: 'org/javassist/javassist/3.30.2-GA/javassist-3.30.2-GA.jar',
    sha256: 'eba37290994b5e4868f3af98ff113f6244a6b099385d9ad46881307d3cb01aaf',
  },
  {
    path: 'javax/activation/javax.activation-api/1.2.0/javax.activation-api-1.2.0.jar',
    sha256: '43fdef0b5b6ceb31b0424b208b930c74ab58fac2ceeb7b3f6fd3aeb8b5ca4393',
  },
  {
    path: 'javax/xml/bind/jaxb-api/2.3.1/jaxb-api-2.3.1.jar',
    sha256: '88b955a0df57880a26a74708bc34f74dcaf8ebf4e78843a28b50eae945732b06',
  },
  {
    path: 'org/glassfish/jersey/core/jersey-client/3.1.10/jersey-client-3.1.10.jar',
    sha256: '96cf86c23b515da20a30a39633a920f12a420d1e5f02c55ef5577ca2694d11c6',
  },
  {
    path: 'org/glassfish/jersey/core/jersey-common/3.1.10/jersey-common-3.1.10.jar',
    sha256: 'b8df5de87d48d6abf555f340755a056c8cb29a660af958e959db8a4cb3552b54',
  },
  {
    path: 'org/glassfish/jersey/containers/jersey-container-servlet/3.1.10/jersey-container-servlet-3.1.10.jar',
    sha256: '4aadc66d2d36afb273b3898581d6aa51e0f992308d56fd51b8e3201efa461f67',
  },
  {
    path:
      'org/glassfish/jersey/containers/jersey-container-servlet-core/3.1.10/' +
      'jersey-container-servlet-core-3.1.10.jar',
    sha256: 'fd15e7e37215d772ccdae8d4076c41a11ad3fec9ca88a1f8a8f6dacf4663bb69',
  },
  {
    path: 'org/glassfish/jersey/inject/jersey-hk2/3.1.10/jersey-hk2-3.1.10.jar',
    sha256: '00ed71c496a856ac1f73272482a7abe27b5a96b823c29cc08f4b708c8d3e647e',
  },
  {
    path: 'org/glassfish/jersey/core/jersey-server/3.1.10/jersey-server-3.1.10.jar',
    sha256: '1b33a9be417b72f7ceef3afe9780781b66122b0f1db78f2f82502988072cfab0',
  },
  {
    path: 'org/eclipse/jetty/jetty-alpn-client/12.0.34/jetty-alpn-client-12.0.34.jar',
    sha256: 'dde78ab533961bb853a8ce5a23a90d4dd54cd6522e9e7f90566ca7f44e035ef9',
  },
  {
    path: 'org/eclipse/jetty/jetty-client/12.0.34/jetty-client-12.0.34.jar',
    sha256: 'b77b7535a809c78af71126b90aed0836cc9f9ac80d32e5cbf7a07025ace14401',
  },
  {
    path: 'org/eclipse/jetty/ee10/jetty-ee10-servlet/12.0.34/jetty-ee10-servlet-12.0.34.jar',
    sha256: '08030501c5868ba348e0e349121cb3493586c29d438c725bf76b0559e8d5f5ed',
  },
  {
    path: 'org/eclipse/jetty/ee10/jetty-ee10-servlets/12.0.34/jetty-ee10-servlets-12.0.34.jar',
    sha256: 'bf9fe841e09f39d498838965b57e52b79f12e7bd5e259e645cc9e0a6cbe96426',
  },
  {
    path: 'org/eclipse/jetty/jetty-http/12.0.34/jetty-http-12.0.34.jar',
    sha256: '63890ecc5bb8bf26c4dd0952ef2d0d3dd3f7434b37b21e51f7ea8dfbe96b9dc0',
  },
  {
    path: 'org/eclipse/jetty/jetty-io/12.0.34/jetty-io-12.0.34.jar',
    sha256: '3704daeb82b39041ee5e6f810636c2fcb9a10476cdbf0fd067e584ed3110d66a',
  },
  {
    path: 'org/eclipse/jetty/jetty-security/12.0.34/jetty-security-12.0.34.jar',
    sha256: 'e9a595eff775859a5461c0ce05e27ace5182ee1fdc1b17016453fa41ca0e1560',
  },
  {
    path: 'org/eclipse/jetty/jetty-server/12.0.34/jetty-server-12.0.34.jar',
    sha256: 'fb7a1401b7b2358e9cb975764c54fac72fcecd7ae5199369041118603cd3fd7d',
  },
  {
    path: 'org/eclipse/jetty/jetty-session/12.0.34/jetty-session-12.0.34.jar',
    sha256: 'a161ae531c5d6a695f17a547fdf90746dcd929f1abac5c60c7061a6fb20d346f',
  },
  {
    path: 'org/eclipse/jetty/jetty-util/12.0.34/jetty-util-12.0.34.jar',
    sha256: '3f8906cd72428d87dbbc0bd915192ce0f426e9db7805d3b0337588c1b6d7206e',
  },
  {
    path: 'net/sf/jopt-simple/jopt-simple/5.0.4/jopt-simple-5.0.4.jar',
    sha256: 'df26cc58f235f477db07f753ba5a3ab243ebe5789d9f89ecf68dd62ea9a66c28',
  },
  {
    path: 'org/bitbucket/b_c/jose4j/0.9.6/jose4j-0.9.6.jar',
    sha256: '7314af50cde9c99e8eaf43eee617a23edcc6bb43036221064355094999d837ef',
  },
  {
    path: 'org/jspecify/jspecify/1.0.0/jspecify-1.0.0.jar',
    sha256: '1fad6e6be7557781e4d33729d49ae1cdc8fdda6fe477bb0cc68ce351eafdfbab',
  },
  {
    path: 'org/apache/kafka/kafka-clients/4.3.1/kafka-clients-4.3.1.jar',
    sha256: '52501b7b47510c66f898871adaf6d2968ab7246561d44ced43643a8a587f0b36',
  },
  {
    path: 'org/apache/kafka/kafka-coordinator-common/4.3.1/kafka-coordinator-common-4.3.1.jar',
    sha256: '66a86b8c89718216ffa72fe4e44b9d1bdf3472e4cb9200c36a0742a25febbdba',
  },
  {
    path: 'org/apache/kafka/kafka-group-coordinator/4.3.1/kafka-group-coordinator-4.3.1.jar',
    sha256: '4ab56d002e1624185c874199e9e0ffb243dbeb9f68b4d0cadf48ce2f617a1126',
  },
  {
    path: 'org/apache/kafka/kafka-group-coordinator-api/4.3.1/kafka-group-coordinator-api-4.3.1.jar',
    sha256: 'd81bc1a3739ff6c9b21815baae00022306342a16d3d94e6a2621201b9980a30d',
  },
  {
    path: 'org/apache/kafka/kafka-metadata/4.3.1/kafka-metadata-4.3.1.jar',
    sha256: '4d73a96c6474a4ebdd67a1cee14da1a94cfd6bb9e6e252685ba5667d8ab7f898',
  },
  {
    path: 'org/apache/kafka/kafka-raft/4.3.1/kafka-raft-4.3.1.jar',
    sha256: '46abbf89806dd22d848e997cdfb1431524cab4ec88e38a7d2806e20b24a70609',
  },
  {
    path: 'org/apache/kafka/kafka-server/4.3.1/kafka-server-4.3.1.jar',
    sha256: '01d736599ec3b0cdbb0480c15219170b28cdae189785e7f0c6f1f26e528eaebc',
  },
  {
    path: 'org/apache/kafka/kafka-server-common/4.3.1/kafka-server-common-4.3.1.jar',
    sha256: 'd7c719f749579a399011f0df7414de8a78f10f074a6122caa550fdb141351575',
  },
  {
    path: 'org/apache/kafka/kafka-share-coordinator/4.3.1/kafka-share-coordinator-4.3.1.jar',
    sha256: '8ceeed7346127e652ea5c650b217890aaff14919f967d27fadce420745bd3066',
  },
  {
    path: 'org/apache/kafka/kafka-storage/4.3.1/kafka-storage-4.3.1.jar',
    sha256: '97e3facddd2914a58f28ec91ef35f8da69963eab3651196e97f487924f6dac98',
  },
  {
    path: 'org/apache/kafka/kafka-storage-api/4.3.1/kafka-storage-api-4.3.1.jar',
    sha256: 'bc2b22639fa554494461d101d599e01bae840d97c4f46e18fdf3d2fe41a47098',
  },
  {
    path: 'org/apache/kafka/kafka-tools/4.3.1/kafka-tools-4.3.1.jar',
    sha256: '62f3c5dd7aa3442d4c5bc6a95f86e2502178ea09de8e27f74d9563bf955e253c',
  },
  {
    path: 'org/apache/kafka/kafka-tools-api/4.3.1/kafka-tools-api-4.3.1.jar',
    sha256: 'dcf6785742e0c8ab11a0fc09c62f1192e11e997dc629669a8db82aa40d933c31',
  },
  {
    path: 'org/apache/kafka/kafka-transaction-coordinator/4.3.1/kafka-transaction-coordinator-4.3.1.jar',
    sha256: 'c64aaa2a88d8fd382c4800204872917686e542043c7916c9e8797d939d8eb313',
  },
  {
    path: 'org/apache/kafka/kafka_2.13/4.3.1/kafka_2.13-4.3.1.jar',
    sha256: 'b098abef5ff878e76f60cd6c559b9baa5663ccb1b55f2837558b22c329d32423',
  },
  {
    path: 'org/apache/logging/log4j/log4j-api/2.25.4/log4j-api-2.25.4.jar',
    sha256: 'c4b642a7f047275215de117e0e3847eb2c7711d84a0aa7433e7b3c096daf341d',
  },
  {
    path: 'org/apache/logging/log4j/log4j-core/2.25.4/log4j-core-2.25.4.jar',
    sha256: '10fee2c0485d54fa44ee75d314f6295508f7b932281873db61a91b88073200e6',
  },
  {
    path: 'org/apache/logging/log4j/log4j-slf4j-impl/2.25.4/log4j-slf4j-impl-2.25.4.jar',
    sha256: '7ac68a0afcc83d54f48d116d79370a43f0a2a6b71b5c1d6dda943bb6a95ddbaa',
  },
  {
    path: 'at/yawk/lz4/lz4-java/1.10.2/lz4-java-1.10.2.jar',
    sha256: '252dabd586d22149a31661a8afc1a50747714eb1a298bd4a6e780c8c91a13866',
  },
  {
    path: 'org/apache/maven/maven-artifact/3.9.15/maven-artifact-3.9.15.jar',
    sha256: 'f154c31f15ac97c37b9cdf9f8d63cde5053c470d2daf54df7dfd3bb3c9e501c6',
  },
  {
    path: 'com/yammer/metrics/metrics-core/2.2.0/metrics-core-2.2.0.jar',
    sha256: '6b7a14a6f34c10f8683f7b5e2f39df0f07b58c7dff0e468ebbc713905c46979c',
  },
  {
    path: 'org/glassfish/hk2/osgi-resource-locator/1.0.3/osgi-resource-locator-1.0.3.jar',
    sha256: 'aab5d7849f7cfcda2cc7c541ba1bd365151d42276f151c825387245dfde3dd74',
  },
  {
    path: 'org/pcollections/pcollections/4.0.2/pcollections-4.0.2.jar',
    sha256: '2bbeef5797a241300c4f7513cd546239629ed7deda4fc0c31df90bb95f5f13ef',
  },
  {
    path: 'org/codehaus/plexus/plexus-utils/3.6.1/plexus-utils-3.6.1.jar',
    sha256: '05a63effd67e2d6b9d610cc82e2bd7473289d34802e57a529b28110f28af5679',
  },
  {
    path: 'com/google/re2j/re2j/1.8/re2j-1.8.jar',
    sha256: '7b52c72156dd7f98b3237a5b35c1d34fba381b21048c89208913ad80a45dfbd7',
  },
  {
    path: 'org/scala-lang/scala-library/2.13.18/scala-library-2.13.18.jar',
    sha256: '4e85d96ff7bc7dc627985523c3541b9917aaa08e956391380c42db21a2c4e5a0',
  },
  {
    path: 'com/typesafe/scala-logging/scala-logging_2.13/3.9.6/scala-logging_2.13-3.9.6.jar',
    sha256: '0ad0c3f4d89d538b3b6c300158555e266aa69cf1b5f6522aba8b5bad238eb994',
  },
  {
    path: 'org/scala-lang/scala-reflect/2.13.18/scala-reflect-2.13.18.jar',
    sha256: '6935ff1982b2ac93d695f15aa66921be2f602921277afe002f018fd8c7d6e29b',
  },
  {
    path: 'org/slf4j/slf4j-api/1.7.36/slf4j-api-1.7.36.jar',
    sha256: 'd3ef575e3e4979678dc01bf1dcce51021493b4d11fb7f1be8ad982877c16a1c0',
  },
  {
    path: 'org/yaml/snakeyaml/2.5/snakeyaml-2.5.jar',
    sha256: 'e6682acf1ace77508ef13649cbf4f8d09d2cf5457bdb61d25ffb6ac0233d78dd',
  },
  {
    path: 'org/xerial/snappy/snappy-java/1.1.10.7/snappy-java-1.1.10.7.jar',
    sha256: '4c766cb3f855415ee734b2392949a0b6f12a60879334a74518deaf6270d32e36',
  },
  {
    path: 'io/swagger/core/v3/swagger-annotations/2.2.39/swagger-annotations-2.2.39.jar',
    sha256: 'ea3017076809f8104ff8a130dc4c12db8c67595aa1d978104a9beca8277a7d29',
  },
  {
    path: 'com/github/luben/zstd-jni/1.5.6-10/zstd-jni-1.5.6-10.jar',
    sha256: 'b6c3237e24b8252a5a9c3a0e1ae30ef8f323412e74bd358548b7a9e527d676df',
  },
];
