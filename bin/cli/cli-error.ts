/** A failure the user can act on: printed as one line (`rmqbench: …`), exit code as given (2: bad usage). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Exit codes, as the README and `rmqbench --help` state them. */
export const EXIT = { ok: 0, error: 1, usage: 2, failedRepetitions: 3 } as const;
