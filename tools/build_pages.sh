#!/usr/bin/env bash
# Render a few chapters of the book, at a scale, into a folder of their own, with warnings as
# errors: a quick check of a page's roles, equations and figures without the whole book.
#
#   tools/build_pages.sh smoke book/in-context/looped-gd [book/icl-scale/parity ...]
#
# The HTML goes to /tmp/pages-<first page's name>/_build/html, the ledgers beside it; the
# introduction and the ledger page are built too (they link the chapters).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scale=$1
shift
name=$(basename "$1")
out=/tmp/pages-$name
rm -rf "$out"
mkdir -p "$out"
{
  echo "format: jb-book"
  echo "root: book/intro"
  echo "parts:"
  echo "  - caption: Pages"
  echo "    chapters:"
  for page in "$@"; do echo "      - file: ${page%.md}"; done
  echo "      - file: book/ledger"
} >"$out/toc.yml"
BOOK_SCALE=$scale BOOK_LEDGER_DIR=$out/ledger .venv/bin/jupyter-book build . --toc "$out/toc.yml" \
  --path-output "$out" -W -n --keep-going
echo "pages: $out/_build/html"
