import { parseRabbitmqVersion, supportsClassicMirroring } from '../core/broker/rabbitmq-version';

/**
 * A pinned RabbitMQ + Erlang pair, installed from Team RabbitMQ's signed RPM repositories
 * (yum1/yum2.rabbitmq.com, the Cloudsmith-backed mirrors documented in RabbitMQ's "Installing on
 * RPM-based Linux" guide, whose el9 repositories list Amazon Linux 2023 among their targets:
 * rabbitmq/rabbitmq-website versioned_docs/version-4.1/install-rpm.md, "Add Yum Repositories").
 *
 * Both versions are exact, so every node of a cluster, and every benchmark run, uses the same bits.
 * The versions are dnf `name-version` specs (e.g. `erlang-27.3.4`), which match the package whatever its
 * release suffix (`-1.el9`): Team RabbitMQ's zero-dependency Erlang RPM is built per OTP release
 * (rabbitmq/erlang-rpm tags v27.3.4 and v26.2.5.6, Makefile OTP_RELEASE; spec `Release: ...%{?dist}`).
 */
export class RabbitMqRelease {
  /**
   * RabbitMQ 3.13 (the last 3.x series; classic mirrored queues still available) on Erlang 26.2.
   * 3.13.7 supports Erlang 26.0 up to 26.2.x, not 27 (rabbitmq-website versioned_docs/version-4.1/which-erlang.md);
   * Erlang 26.2.5.6 is a rabbitmq/erlang-rpm release (tag v26.2.5.6).
   */
  public static readonly V3_13 = new RabbitMqRelease('3.13.7', '26.2.5.6');
  /**
   * RabbitMQ 4.1 (quorum queues and streams only; mirroring removed) on Erlang 27.3.
   * 4.1.4 supports Erlang 26.2 up to 27.x, not 28 (which-erlang.md, as above); Erlang 27.3.4 is a
   * rabbitmq/erlang-rpm release (tag v27.3.4). Newer 4.1 patches exist (4.1.8 is listed there); 4.1.4 is kept so
   * that results stay comparable with earlier runs.
   */
  public static readonly V4_1 = new RabbitMqRelease('4.1.4', '27.3.4');

  /**
   * Any other pair. Check RabbitMQ's Erlang compatibility table: the RPM refuses an Erlang outside it.
   * @param rabbitmqVersion exact RabbitMQ version, e.g. "4.0.9"
   * @param erlangVersion exact Erlang/OTP version, e.g. "27.3.4"
   */
  public static of(rabbitmqVersion: string, erlangVersion: string): RabbitMqRelease {
    return new RabbitMqRelease(rabbitmqVersion, erlangVersion);
  }

  private constructor(
    public readonly rabbitmqVersion: string,
    public readonly erlangVersion: string,
  ) {
    if (!/^\d+\.\d+\.\d+$/.test(rabbitmqVersion)) {
      throw new Error(`rabbitmqVersion must be an exact version such as "4.1.4", got "${rabbitmqVersion}"`);
    }
    if (!/^\d+(\.\d+){1,3}$/.test(erlangVersion)) {
      throw new Error(`erlangVersion must be an exact Erlang/OTP version such as "27.3.4", got "${erlangVersion}"`);
    }
  }

  /** Major version of RabbitMQ (3 or 4). */
  public get major(): number {
    return parseRabbitmqVersion(this.rabbitmqVersion).major;
  }

  /** Classic queue mirroring exists only before 4.0. */
  public get supportsClassicMirroring(): boolean {
    return supportsClassicMirroring(this.rabbitmqVersion);
  }
}
