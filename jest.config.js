/** Unit tests run in-process and fast; integration tests start real RabbitMQ nodes, PerfTest and DynamoDB Local. */
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
module.exports = {
  // One TMPDIR per test run, removed at its end (test/jest-temp-dir.js).
  globalSetup: '<rootDir>/test/jest-global-setup.js',
  globalTeardown: '<rootDir>/test/jest-global-teardown.js',
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform: { '^.+\\.ts$': tsJest },
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      testPathIgnorePatterns: ['\\.integration\\.test\\.ts$'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform: { '^.+\\.ts$': tsJest },
      testMatch: ['<rootDir>/test/**/*.integration.test.ts'],
    },
  ],
};
