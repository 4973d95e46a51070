/** Unit tests run in-process and fast; integration tests start real RabbitMQ nodes, PerfTest and DynamoDB Local. */
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
module.exports = {
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
