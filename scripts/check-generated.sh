#!/usr/bin/env bash
# Fails if `npm run generate` changes src/gen/: the committed generated code
# must be exactly what the committed protos produce.
set -euo pipefail
cd "$(dirname "$0")/.."
npx --no-install buf generate
if ! git diff --quiet --exit-code -- src/gen || [ -n "$(git ls-files --others --exclude-standard -- src/gen)" ]; then
  echo "src/gen/ is out of date: run 'npm run generate' and commit the result" >&2
  git status --short -- src/gen >&2
  exit 1
fi
echo "src/gen/ is up to date"
