/** Quotes a value for a POSIX shell: single quotes, with embedded single quotes closed and escaped. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * A `cat > file <<'DELIM'` command that writes `content` byte for byte. The quoted delimiter stops the
 * shell from expanding anything inside, so what lands on disk is exactly what was generated.
 */
export function writeFileCommand(path: string, content: string, delimiter: string): string {
  if (!content.endsWith('\n'))
    throw new Error(`content for ${path} must end with a newline to be written by a here-document`);
  if (content.split('\n').includes(delimiter))
    throw new Error(`content for ${path} contains the here-document delimiter ${delimiter}`);
  return `cat > ${path} <<'${delimiter}'\n${content}${delimiter}`;
}
