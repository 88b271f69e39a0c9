#!/bin/sh
# check.sh PACKAGE.deb: Debian's checks of the package (make deb-check).
#   - lintian (Debian 12's, with info tags shown): any error or warning that
#     the package's overrides do not cover fails, and so does an override
#     that no longer matches anything (it would hide a future tag);
#   - systemd-analyze verify on the unit, in the package's own tree (the
#     binary it starts is there; the programs of the Depends it runs, such
#     as /bin/kill, are copied in from this host).
set -eu
deb=$(readlink -f "$1")
work=$(mktemp -d "${TMPDIR:-/tmp}/netreconcile-debcheck.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0

echo "lintian $(lintian --version | awk '{print $2}') on $(basename "$deb"):"
# As nobody when root: lintian unpacks what it checks, and says it should
# not run as root.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	cp "$deb" "$work/" && chmod 755 "$work" && chmod 644 "$work/$(basename "$deb")"
	lintian_as() { HOME=$work setpriv --reuid=nobody --regid=nogroup --clear-groups -- lintian "$@"; }
	target=$work/$(basename "$deb")
else
	lintian_as() { lintian "$@"; }
	target=$deb
fi
lintian_as --display-info --show-overrides --tag-display-limit 0 "$target" >"$work/lintian.out" 2>&1 || true
cat "$work/lintian.out"
if grep -E '^[EW]: ' "$work/lintian.out" >/dev/null; then
	echo "FAIL: lintian reports errors or warnings (above); fix them, or override them in packaging/deb/lintian-overrides with the reason"
	fail=1
fi
if grep -E 'unused-override|mismatched-override' "$work/lintian.out" >/dev/null; then
	echo "FAIL: an override of packaging/deb/lintian-overrides matches nothing"
	fail=1
fi
# Every override is reported as used (O:), each with its reason.
n=$(grep -c '^netreconcile: ' "$(dirname "$0")/lintian-overrides")
o=$(grep -c '^O: ' "$work/lintian.out" || true)
if [ "$n" != "$o" ]; then
	echo "FAIL: $n overrides in packaging/deb/lintian-overrides, $o used"
	fail=1
fi

echo "systemd-analyze verify netreconcile.service (systemd $(systemctl --version | awk 'NR == 1 {print $2}')), in the package's tree:"
dpkg-deb -x "$deb" "$work/root"
unit=$work/root/usr/lib/systemd/system/netreconcile.service
for cmd in $(sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\([^ ]*\).*/\1/p' "$unit" | sort -u); do
	if [ ! -e "$work/root$cmd" ]; then
		[ -x "$cmd" ] || { echo "FAIL: $cmd (the unit runs it) is neither in the package nor on this host"; fail=1; continue; }
		install -D -m 0755 "$cmd" "$work/root$cmd"
	fi
done
if ! systemd-analyze verify --root="$work/root" netreconcile.service >"$work/verify.out" 2>&1 || [ -s "$work/verify.out" ]; then
	cat "$work/verify.out"
	echo "FAIL: systemd-analyze verify"
	fail=1
else
	echo "(no finding)"
fi
exit "$fail"
