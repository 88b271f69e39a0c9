#!/bin/sh
# build.sh BINARY VERSION ARCH OUT.deb: the Debian package, staged in a
# tree and packed with dpkg-deb (make deb builds BINARY and calls this).
#
#   /usr/sbin/netreconcile                       BINARY (stripped, static)
#   /usr/lib/systemd/system/netreconcile.service
#   /usr/lib/sysusers.d/netreconcile.conf
#   /etc/netreconcile/netreconcile.yaml          a conffile; conf.d/ beside it
#   /usr/share/man/man8/netreconcile*.8.gz       from the help (internal/cli/gendoc)
#   /usr/share/bash-completion/completions/netreconcile, the zsh and fish
#     scripts in their vendor directories         likewise
#   /usr/share/doc/netreconcile/                 copyright, changelog.gz, README,
#     docs/ (with the JSON Schemas) and examples/ (compressed as dh_compress
#     does: over 4 kB, not the copyright, the examples or the schemas)
#   /usr/share/lintian/overrides/netreconcile    each override with its reason
#
# Timestamps are the last commit's (SOURCE_DATE_EPOCH, which dpkg-deb clamps
# the files' to), so the same tree gives the same package.
set -eu
bin=$1 version=$2 arch=$3 out=$4
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top"

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)

work=$(mktemp -d "${TMPDIR:-/tmp}/netreconcile-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
umask 022
root=$work/root
doc=$root/usr/share/doc/netreconcile

install -D -m 0755 "$bin" "$root/usr/sbin/netreconcile"
install -D -m 0644 packaging/netreconcile.service "$root/usr/lib/systemd/system/netreconcile.service"
install -D -m 0644 packaging/sysusers.conf "$root/usr/lib/sysusers.d/netreconcile.conf"
install -D -m 0644 packaging/netreconcile.yaml "$root/etc/netreconcile/netreconcile.yaml"
install -d -m 0755 "$root/etc/netreconcile/conf.d"

# Manual pages and completion, from the help text the binary prints.
"$GO" run ./internal/cli/gendoc -man "$work/man" -completion "$work/completion" -version "$version" -date "$date"
install -d -m 0755 "$root/usr/share/man/man8"
for page in "$work"/man/*.8; do
	gzip -9n <"$page" >"$root/usr/share/man/man8/$(basename "$page").gz"
done
install -D -m 0644 "$work/completion/netreconcile" "$root/usr/share/bash-completion/completions/netreconcile"
install -D -m 0644 "$work/completion/_netreconcile" "$root/usr/share/zsh/vendor-completions/_netreconcile"
install -D -m 0644 "$work/completion/netreconcile.fish" "$root/usr/share/fish/vendor_completions.d/netreconcile.fish"

# Documentation.
install -D -m 0644 packaging/copyright "$doc/copyright"
install -m 0644 README.md "$doc/README.md"
install -d -m 0755 "$doc/docs" "$doc/examples"
install -m 0644 docs/*.md "$doc/docs/"
# The JSON Schemas, uncompressed: they refer to each other by file name,
# and editors and validators read them as they are.
if ls docs/schema/*.json >/dev/null 2>&1; then
	install -d -m 0755 "$doc/docs/schema"
	install -m 0644 docs/schema/*.json "$doc/docs/schema/"
fi
install -m 0644 examples/*.yaml examples/*.sh "$doc/examples/"
find "$doc" \( -path "$doc/examples" -o -path "$doc/docs/schema" \) -prune -o -type f ! -name copyright -size +4k -exec gzip -9n {} +

# The changelog: packaging/changelog, whose top entry a snapshot build
# (version.sh) renames, or follows with an entry of its own.
{
	head=$(sed -n '1s/^netreconcile (\([^)]*\)) \([^;]*\);.*/\1 \2/p' packaging/changelog)
	entry_version=${head% *} entry_dist=${head#* }
	snapshot="  * Snapshot of commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
	stamp=" -- netreconcile developers <netreconcile@example.invalid>  $(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")"
	if [ "$version" = "$entry_version" ]; then
		cat packaging/changelog
	elif [ "$entry_dist" = UNRELEASED ]; then
		# The entry being prepared, under the snapshot's version, dated now.
		awk -v v="$version" -v s="$snapshot" -v stamp="$stamp" '
			NR == 1 { sub(/\([^)]*\)/, "(" v ")"); print; next }
			NR == 2 { print; print s; next }
			!done && /^ -- / { print stamp; done = 1; next }
			{ print }' packaging/changelog
	else
		printf 'netreconcile (%s) UNRELEASED; urgency=medium\n\n%s\n\n%s\n\n' "$version" "$snapshot" "$stamp"
		cat packaging/changelog
	fi
} | gzip -9n >"$doc/changelog.gz"

install -D -m 0644 packaging/deb/lintian-overrides "$root/usr/share/lintian/overrides/netreconcile"

# The control area.
install -d -m 0755 "$root/DEBIAN"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$root/DEBIAN/"
echo /etc/netreconcile/netreconcile.yaml >"$root/DEBIAN/conffiles"
size=$(du -sk --apparent-size --exclude=DEBIAN "$root" | cut -f1)
grep -v '^#' packaging/deb/control |
	sed "s/@VERSION@/$version/; s/@ARCH@/$arch/; s/@INSTALLED_SIZE@/$size/" >"$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"

mkdir -p "$(dirname "$out")"
# Packed beside it and renamed over it: a reader of the last build (the
# systemd guest's Ansible run, lintian) never sees half a package.
dpkg-deb --root-owner-group -Zxz --build "$root" "$out.$$.tmp" >/dev/null
mv -f "$out.$$.tmp" "$out"
echo "built $out"
