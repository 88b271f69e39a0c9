#!/bin/sh
# version.sh: the version of the build (make build stamps it) and of the
# package, from the top entry of packaging/changelog and git. At the tag
# vVERSION, VERSION; while the entry is UNRELEASED, a snapshot before it
# (VERSION~gitN.HASH, N commits in all); after a release entry, a snapshot
# after it (VERSION+gitN.HASH), which sorts after VERSION as it should.
# Without git, VERSION.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(sed -n '1s/^netreconcile (\([^)]*\)) \([^;]*\);.*/\1 \2/p' "$here/changelog")
version=${top% *}
dist=${top#* }
[ -n "$version" ] || { echo "version.sh: no version on the first line of packaging/changelog" >&2; exit 1; }
if ! hash=$(git -C "$here" rev-parse --short HEAD 2>/dev/null); then
	echo "$version"
	exit 0
fi
if [ "$(git -C "$here" tag --points-at HEAD --list "v$version")" = "v$version" ]; then
	echo "$version"
	exit 0
fi
n=$(git -C "$here" rev-list --count HEAD)
if [ "$dist" = UNRELEASED ]; then
	echo "$version~git$n.$hash"
else
	echo "$version+git$n.$hash"
fi
