#!/bin/bash
# ansible-test sanity on the collection, offline (ansible-test-offline: the
# Debian packages in place of ansible-test's PyPI environments).
#
#   sanity.sh COLLECTION-DIR WORK-DIR
#
# ansible-test wants the collection at ansible_collections/NS/NAME with the
# current directory inside it, and writes tests/output there: it runs on a
# copy. Every test ansible-test has runs, but two:
#   - ansible-doc: ansible-test's environment prints "packaging Python module
#     unavailable" on stderr (its Python does not see Debian's
#     python3-packaging), which the test counts as a failure; run.sh runs
#     ansible-doc on every module itself, text and --json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
coll=$1
work=$2
dest="$work/sanity/ansible_collections/netreconcile/net"
mkdir -p "$(dirname "$dest")"
cp -r "$coll" "$dest"
rm -rf "$dest/tests/output"
cd "$dest"
echo "linters (Debian's, not ansible-test's pins): $(dpkg-query -W -f '${Package} ${Version}, ' pylint pycodestyle yamllint python3-voluptuous)"
"$here/ansible-test-offline" sanity --color no --python-interpreter /usr/bin/python3 --skip-test ansible-doc 2>&1 |
	tee "$work/sanity.log" | grep -Ev '^(WARNING: Using locale|$)'
rc=${PIPESTATUS[0]}
echo "sanity tests run: $(grep -c '^Running sanity test' "$work/sanity.log"), failed: $(grep -o 'The [0-9]* sanity test' "$work/sanity.log" | grep -o '[0-9]*' || echo 0)"
exit "$rc"
