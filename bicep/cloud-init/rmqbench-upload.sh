#!/usr/bin/env bash
# Uploads a result file to the pre-signed URL the benchmark controller hands over:
# an Azure Blob SAS URL (PUT as a block blob) or an S3 pre-signed PUT URL.
# Usage: rmqbench-upload <file> <pre-signed-url>
#        rmqbench-upload <file> -        (the URL on stdin: it then never appears in any process's arguments)
# The URL carries its own credential: it reaches curl in a config line on stdin and is never logged.
set -euo pipefail
file="${1:?file to upload}"
url="${2:?pre-signed URL, or - to read it from stdin}"
if [ "$url" = - ]; then IFS= read -r url || [ -n "$url" ]; fi
[ -f "$file" ] || { echo "rmqbench-upload: no such file: $file" >&2; exit 1; }
headers=(-H "Content-Type: application/octet-stream")
case "$url" in
  https://*.blob.core.windows.net/*) headers+=(-H "x-ms-blob-type: BlockBlob") ;;
  https://*) ;;
  *) echo "rmqbench-upload: expected an https pre-signed URL" >&2; exit 1 ;;
esac
# curl's config syntax: a quoted value with backslashes and double quotes escaped.
url=${url//\\/\\\\}
url=${url//\"/\\\"}
printf 'url = "%s"\n' "$url" | curl -sSf --retry 5 --retry-all-errors -K - -X PUT "${headers[@]}" --upload-file "$file" >/dev/null
echo "rmqbench-upload: uploaded $file" >&2
