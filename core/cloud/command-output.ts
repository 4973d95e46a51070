/**
 * What a failed remote command (SSM Run Command, Azure Run Command) printed, cut to what names the problem. The end of
 * stderr is usually that, except after a Java stack trace: PerfTest, the lost-message verifier and Kafka's tools end a
 * failure with dozens of `at ...` frames, and their last 1,000 characters name no error at all (a CI run's report said
 * only "nel.java:552)"). There the exception's own line and its causes come first, then the last line that is not a
 * frame.
 */

/** A stack frame line of a Java trace (`at pkg.Class.method(File.java:12)`, `... 12 more`). */
const FRAME = /^\s*(at \S+\(.*\)|\.\.\. \d+ more)\s*$/;
/**
 * The line naming a Java exception: `Exception in thread "main" x.y.ZException: why`, `x.y.ZError: why`,
 * `Caused by: ...`.
 */
const EXCEPTION =
  /^\s*(Exception in thread "[^"]*" |Caused by: )?([a-z_$][\w$]*\.)+[A-Z][\w$]*(Exception|Error)\b(:.*)?$/;

/**
 * `text` cut to at most `maxChars`: its tail, or, when it holds a Java stack trace, the exception lines (the first one
 * and each `Caused by`, at most four) and then the last line that is not a frame, joined by " | ".
 */
export function commandFailureExcerpt(text: string | undefined, maxChars = 1000): string {
  const trimmed = (text ?? '').trim();
  if (trimmed.length <= maxChars && !/\n\s*at \S+\(/.test(trimmed)) return trimmed;
  const lines = trimmed.split('\n').map((line) => line.trimEnd());
  const exceptions = lines.filter((line) => EXCEPTION.test(line)).map((line) => line.trim());
  if (exceptions.length === 0) return trimmed.slice(-maxChars);
  const distinct = [...new Set(exceptions)].slice(0, 4);
  const last = [...lines].reverse().find((line) => line.trim() !== '' && !FRAME.test(line) && !EXCEPTION.test(line));
  const parts = last && !distinct.includes(last.trim()) ? [...distinct, last.trim()] : distinct;
  const excerpt = parts.join(' | ');
  return excerpt.length <= maxChars ? excerpt : `${excerpt.slice(0, maxChars - 1)}…`;
}
