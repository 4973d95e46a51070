/**
 * The NATS software rmqbench runs, pinned, in one place: the server (JetStream is built into nats-server), the NATS
 * CLI and the Go client its own load client (local/nats-load/) is built on. All three are Go modules, built with the
 * machine's Go toolchain from the Go module proxy (local/nats-binaries.ts); Debian's nats-server (2.9.10) predates
 * current JetStream behaviour.
 */

/**
 * nats-server, the broker: `go install github.com/nats-io/nats-server/v2@v2.15.0` here, the official release tarball of
 * the same version on AWS and Azure (cdk/nats-artifacts.ts), so that local and cloud runs compare one server. 2.15.0,
 * not the newer 2.15.2 the Go proxy also serves: the clouds check the release tarball against a published SHA-256, and
 * 2.15.0's are the newest published where they could be read (cdk/nats-artifacts.ts cites them).
 */
export const NATS_SERVER_VERSION = '2.15.0';
export const NATS_SERVER_MODULE = 'github.com/nats-io/nats-server/v2';

/**
 * The NATS CLI (`nats`): the smoke test's publish and read-back;
 * `go install github.com/nats-io/natscli/nats@v0.5.0`.
 */
export const NATSCLI_VERSION = '0.5.0';
export const NATSCLI_PACKAGE = 'github.com/nats-io/natscli/nats';

/** The official Go client the load client is built on (local/nats-load/go.mod pins it; a test keeps them equal). */
export const NATS_GO_CLIENT_VERSION = '1.55.0';

/**
 * The oldest Go toolchain that builds all three: their go.mod files say `go 1.26.0`, and `go` refuses a module that
 * needs a newer toolchain than its own (with GOTOOLCHAIN=local it does not fetch one).
 */
export const NATS_MIN_GO_VERSION = '1.26.0';
