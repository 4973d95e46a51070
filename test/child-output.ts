import type { ChildProcess } from 'node:child_process';

/**
 * Resolves once `child`'s stdout and stderr have ended, at most `capMs` after it exited. A child's 'exit' can come
 * before the last chunks of its piped output are read (Node: "the child process stdio streams might still be open"
 * when 'exit' is emitted, https://nodejs.org/api/child_process.html#event-exit); output read at 'exit' can be cut
 * short, as a large `--json` answer was. The cap covers a grandchild that keeps a copy of the pipe open.
 */
export async function outputEnded(child: ChildProcess, capMs = 10_000): Promise<void> {
  const ended = (stream: NodeJS.ReadableStream | null) =>
    stream === null || (stream as NodeJS.ReadableStream & { readableEnded: boolean }).readableEnded
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          stream.once('end', resolve);
          stream.once('close', resolve);
        });
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all([ended(child.stdout), ended(child.stderr)]),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, capMs))),
  ]);
  clearTimeout(timer);
}
