module.exports = require('./jest-temp-dir').setup;
