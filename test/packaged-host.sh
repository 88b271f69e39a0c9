#!/bin/sh
# packaged-host.sh COMMAND...: run COMMAND where this machine looks as it
# does once the Debian package is installed: the system user and group
# netreconcile exist (in /etc/passwd and /etc/group) and own
# /var/lib/netreconcile (0750), the service's state directory. All of it
# lives in a mount namespace of COMMAND's own (bind mounts of edited copies,
# an overlay on /var/lib): the machine itself is never changed, and other
# runs on it see nothing. Needs root.
#
# make test-packaged-host runs the tests that drive the command line as root
# this way, so that they hold both on a machine without the package (make
# test) and on one with it: root there runs commands as the service's user
# when the state directory is that user's (internal/cli/runas_linux.go).
set -eu
[ "$(id -u)" = 0 ] || { echo "packaged-host.sh needs root (a mount namespace)" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: packaged-host.sh COMMAND..." >&2; exit 2; }
if [ "${NETRECONCILE_PACKAGED_HOST:-}" != inside ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/packaged-host.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	# Ids nobody uses here, as systemd-sysusers would pick them.
	uid=
	for i in $(seq 999 -1 900); do
		if ! getent passwd "$i" >/dev/null && ! getent group "$i" >/dev/null; then
			uid=$i
			break
		fi
	done
	[ -n "$uid" ] || { echo "packaged-host.sh: no free system id" >&2; exit 1; }
	grep -v '^netreconcile:' /etc/passwd >"$work/passwd"
	grep -v '^netreconcile:' /etc/group >"$work/group"
	echo "netreconcile:x:$uid:$uid:netreconcile network reconciler:/var/lib/netreconcile:/usr/sbin/nologin" >>"$work/passwd"
	echo "netreconcile:x:$uid:" >>"$work/group"
	chmod 644 "$work/passwd" "$work/group"
	mkdir -m 700 "$work/upper" "$work/overlay-work"
	rc=0
	NETRECONCILE_PACKAGED_HOST=inside PACKAGED_HOST_WORK=$work PACKAGED_HOST_ID=$uid \
		unshare --mount --propagation private "$0" "$@" || rc=$?
	exit "$rc"
fi
work=$PACKAGED_HOST_WORK
mount --bind "$work/passwd" /etc/passwd
mount --bind "$work/group" /etc/group
mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$work/upper,workdir=$work/overlay-work" /var/lib
rm -rf /var/lib/netreconcile
install -d -o "$PACKAGED_HOST_ID" -g "$PACKAGED_HOST_ID" -m 0750 /var/lib/netreconcile
unset NETRECONCILE_PACKAGED_HOST PACKAGED_HOST_WORK PACKAGED_HOST_ID
echo "packaged host: $(getent passwd netreconcile), $(stat -c '%A %U:%G' /var/lib/netreconcile) /var/lib/netreconcile" >&2
exec "$@"
