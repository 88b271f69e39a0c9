#!/usr/bin/env bash
# systemd VM test: a Debian root made with debootstrap boots with systemd as PID 1 on
# the VM kernel of vm.sh, installs the netreconcile .deb and checks the unit under a
# real service manager (test/vm/systemd-test.sh, run inside). Its sshd, forwarded to a
# port of 127.0.0.1, lets Ansible on the host install the package with the role and
# run the fleet mesh on the guest's kernel WireGuard (ansible/test/vm.sh). See
# test/vm/README.md.
#
#   systemd.sh root    make (or reuse) the cached Debian root image; prints its path
#   systemd.sh test    boot it once with the .deb and run the checks; exits non-zero on
#                      a failed check, a missing marker or a timeout
#   systemd.sh shell   the same boot, a root shell on the console instead of the checks
#
# Settings (environment; mk/vm-systemd.mk passes the make variables):
#   VM_SYSTEMD_DEB       the .deb to install (required for test and shell)
#   VM_SYSTEMD_SUITE     Debian suite of the root (default: the host's codename)
#   VM_SYSTEMD_MIRROR    mirror (default: the one the host's apt uses for that codename)
#   VM_SYSTEMD_PACKAGES  more packages for the root (space separated)
#   VM_SYSTEMD_TIMEOUT   seconds before qemu is killed (default 1800)
# and VM_MEM, VM_SMP, VM_CACHE, VM_KERNEL_SUITE, GO as for vm.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=vm.sh
. "$here/vm.sh"

timeout_s=${VM_SYSTEMD_TIMEOUT:-1800}
work=$cache/work-systemd
deb=${VM_SYSTEMD_DEB:-}
suite=${VM_SYSTEMD_SUITE:-$(. /etc/os-release && echo "$VERSION_CODENAME")}
# Bump when the way the root is made changes, so that old caches are not reused.
root_recipe=1
# What the checks and the package need; minbase has neither systemd nor the tools.
# wireguard-go, wireguard-tools, iputils-ping: the userspace WireGuard restart check;
# openssh-server, python3-apt: a managed node for Ansible on the host (ansible/test/vm.sh),
# whose role installs the package with the apt module.
base_packages="systemd systemd-sysv iproute2 nftables kmod wireguard-go wireguard-tools iputils-ping procps openssh-server python3-apt"

mirror() {
	local uri
	if [ -n "${VM_SYSTEMD_MIRROR:-}" ]; then
		echo "$VM_SYSTEMD_MIRROR"
		return
	fi
	# shellcheck disable=SC2016 # apt's own $(FIELD) syntax
	uri=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 'Created-By: Packages' |
		awk -v c="$(. /etc/os-release && echo "$VERSION_CODENAME")" '$1 == c { print $2; exit }')
	echo "${uri:-http://deb.debian.org/debian/}"
}

# The package's Depends (first alternative, no versions): the root has them before
# dpkg -i, as apt would have installed them.
deb_depends() {
	[ -n "$deb" ] || return 0
	dpkg-deb -f "$deb" Depends 2>/dev/null | tr ',' '\n' |
		sed 's/|.*//; s/(.*)//; s/:any//; s/[[:space:]]//g' | grep -v '^$' || true
}

packages() {
	# shellcheck disable=SC2086,SC2046 # word lists
	printf '%s\n' $base_packages ${VM_SYSTEMD_PACKAGES:-} $(deb_depends) | LC_ALL=C sort -u | paste -sd' '
}

# cmd_root: the cached root image for this suite, mirror and package list.
# debootstrap --variant=minbase plus the packages, a few settings for a fast headless
# boot, then an ext4 image made with mke2fs -d. Runs boot it with snapshot=on, so the
# image in the cache is never written.
cmd_root() {
	local pkgs mir key dir tree img t0 size
	pkgs=$(packages)
	mir=$(mirror)
	key=$(printf '%s\n' "$root_recipe" "$suite" "$mir" "$pkgs" | sha256sum | cut -c1-12)
	dir=$cache/sysroot/$suite-$key
	img=$dir/root.ext4
	if [ -f "$dir/.ok" ]; then
		log "root cached: $img ($suite: $pkgs)"
		echo "$img"
		return
	fi
	command -v debootstrap >/dev/null || {
		[ "$(id -u)" = 0 ] || die "debootstrap is missing (sudo apt-get install debootstrap)"
		host_apt_update
		log "apt-get install debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
			die "apt-get install debootstrap failed"
	}
	command -v mke2fs >/dev/null || die "mke2fs is missing (e2fsprogs)"
	[ "$(id -u)" = 0 ] || die "debootstrap needs root"
	t0=$(now)
	rm -rf "$dir"
	mkdir -p "$dir"
	tree=$dir/tree
	log "debootstrap $suite from $mir with: $pkgs"
	debootstrap --variant=minbase --include="${pkgs// /,}" "$suite" "$tree" "$mir" >"$dir/debootstrap.log" 2>&1 || {
		tail -n 20 "$dir/debootstrap.log" >&2
		die "debootstrap failed; see $dir/debootstrap.log"
	}

	echo nrvm >"$tree/etc/hostname"
	printf '127.0.0.1 localhost nrvm\n::1 localhost\n' >"$tree/etc/hosts"
	: >"$tree/etc/fstab"
	# A machine id now, so that the first boot is not a "first boot" (no firstboot units).
	rm -f "$tree/etc/machine-id"
	chroot "$tree" systemd-machine-id-setup >/dev/null
	# Headless and offline: no gettys, no timers or network waits that cost time under TCG.
	for u in getty@.service serial-getty@.service console-getty.service \
		apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer \
		systemd-timesyncd.service systemd-networkd-wait-online.service \
		systemd-tmpfiles-clean.timer man-db.timer; do
		ln -sf /dev/null "$tree/etc/systemd/system/$u"
	done
	mkdir -p "$tree/etc/systemd/journald.conf.d"
	printf '[Journal]\nStorage=volatile\n' >"$tree/etc/systemd/journald.conf.d/nrvm.conf"
	rm -rf "$tree/var/cache/apt/archives/"*.deb "$tree/var/lib/apt/lists/"*_Packages

	# Room for the package, the modules the run copies in, the journal.
	size=$(($(du -sm "$tree" | cut -f1) + 256))
	log "mke2fs -d ($size MiB)"
	rm -f "$img"
	mke2fs -q -t ext4 -L nrvm-root -d "$tree" "$img" "${size}M" >&2
	printf '%s\n' "$pkgs" >"$dir/packages"
	rm -rf "$tree"
	touch "$dir/.ok"
	log "root ready in $(since "$t0")s: $img"
	echo "$img"
}

# cmd_initrd_systemd MODE: busybox, the virtio modules, test/vm/systemd-init as /init,
# and the payload it copies into the root before switch_root (the .deb, the test
# script and its unit, root's authorized SSH key, the kernel modules of modules.txt).
cmd_initrd_systemd() {
	local mode=$1 t0 kmods a list
	load_env
	t0=$(now)
	mkdir -p "$work"
	root=$work/root
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,run,tmp,newroot,etc/nrvm,lib/modules,payload}
	install -m 0755 "$BUSYBOX_DIR/bin/busybox" "$root/bin/busybox"
	for a in $("$root/bin/busybox" --list-full); do
		[ "$a" = linuxrc ] && continue
		[ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
	done
	install -m 0755 "$here/systemd-init" "$root/init"

	# Boot modules: the root disk's virtio stack, loaded in dependency order. The
	# trees of modules.txt go along for the root's /lib/modules (modprobe there).
	list=$work/modules.txt
	{
		echo "load virtio_pci"
		echo "load virtio_blk"
		echo "load virtio_net"
		grep '^tree ' "$here/modules.txt"
	} >"$list"
	kmods=$KERNEL_DIR/lib/modules/$KVER
	resolve_modules "$kmods" "$list"
	# The root's full module list: the boot stack plus every `load` of modules.txt.
	mkdir -p "$root/lib/modules/$KVER"
	(cd "$kmods" && tar -cf - -T "$work/mods.include" modules.order modules.builtin modules.builtin.modinfo) |
		(cd "$root/lib/modules/$KVER" && tar -xf -)
	cp "$work/mods.load" "$root/etc/nrvm/modules.load"
	list=$work/modules-root.txt
	grep -v '^#' "$here/modules.txt" >"$list"
	resolve_modules "$kmods" "$list"
	(cd "$kmods" && tar -cf - -T "$work/mods.include") | (cd "$root/lib/modules/$KVER" && tar -xf -)
	depmod -b "$root" "$KVER"

	install -m 0644 "$deb" "$root/payload/netreconcile.deb"
	install -m 0755 "$here/systemd-test.sh" "$root/payload/systemd-test.sh"
	# Root's key for Ansible on the host (ansible/test/vm.sh), made for this run.
	rm -f "$work/ssh_key" "$work/ssh_key.pub"
	ssh-keygen -q -t ed25519 -N '' -C nrvm -f "$work/ssh_key"
	install -m 0600 "$work/ssh_key.pub" "$root/payload/authorized_keys"
	echo "$mode" >"$root/etc/nrvm/mode"
	nonce=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
	echo "$nonce" >"$root/etc/nrvm/nonce"

	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		gzip -1 >"$work/initrd.img.tmp"
	mv "$work/initrd.img.tmp" "$work/initrd.img"
	log "initramfs $(du -h "$work/initrd.img" | cut -f1) built in $(since "$t0")s"
}

boot_args() { # image [ssh-port]
	# shellcheck disable=SC2046
	echo $(qemu_args) -kernel "$KERNEL_DIR/boot/vmlinuz-$KVER" -initrd "$work/initrd.img" \
		-drive "file=$1,format=raw,if=virtio,snapshot=on" \
		-netdev "user,id=n0${2:+,hostfwd=tcp:127.0.0.1:$2-:22}" -device virtio-net-pci,netdev=n0
}

# free_port: a TCP port of 127.0.0.1 nothing listens on.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ansible_when_ready RAW PORT: once the guest reports NRVM-ANSIBLE-READY, run
# ansible/test/vm.sh against it over SSH and hand its PASS/FAIL lines back to the
# guest, which puts them in its report and goes on. Its output goes to
# $work/ansible.log.
ansible_when_ready() {
	local raw=$1 port=$2 rc
	until grep -q '^NRVM-ANSIBLE-READY' "$raw" 2>/dev/null; do
		grep -q '^NRVM-END' "$raw" 2>/dev/null && return
		sleep 1
	done
	rc=0
	# Well within the guest's wait for the report (systemd-test.sh, 1200 s).
	timeout --kill-after=10 1100 "$here/../../ansible/test/vm.sh" "$port" "$work/ssh_key" "$deb" "$work/ansible.report" \
		>"$work/ansible.log" 2>&1 || rc=$?
	[ "$rc" = 124 ] && echo "FAIL: ansible: ansible/test/vm.sh did not finish in 1100 s" >>"$work/ansible.report"
	echo "ansible/test/vm.sh: exit $rc" >>"$work/ansible.report"
	for _ in 1 2 3; do
		if ssh -p "$port" -i "$work/ssh_key" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
			-o LogLevel=ERROR -o ConnectTimeout=30 root@127.0.0.1 'cat >/run/nrvm/ansible.report && touch /run/nrvm/ansible.done' \
			<"$work/ansible.report"; then
			return
		fi
		sleep 5
	done
	echo "could not hand the report to the guest" >>"$work/ansible.log"
}

kernel_cmdline() {
	echo "console=ttyS0 quiet panic=-1 no_timer_check systemd.show_status=0 systemd.log_target=console ${VM_APPEND:-}"
}

need_deb() {
	[ -n "$deb" ] || die "VM_SYSTEMD_DEB is not set (make vm-systemd-test builds and passes it)"
	[ -f "$deb" ] || die "no package at $deb"
	deb=$(readlink -f "$deb")
}

cmd_shell_systemd() {
	local img
	[ -t 0 ] || die "vm-systemd-shell needs a terminal"
	need_deb
	img=$(cmd_root)
	cmd_initrd_systemd shell
	log "booting $img; the .deb is /nrvm/netreconcile.deb; leave with 'systemctl poweroff -ff' (or Ctrl-a x)"
	# shellcheck disable=SC2046
	exec "$qemu" $(boot_args "$img") -append "$(kernel_cmdline)" -serial mon:stdio -serial null
}

cmd_test_systemd() {
	local t0 tall img report raw console qrc rc pass fail port watcher
	tall=$(now)
	need_deb
	img=$(cmd_root)
	cmd_initrd_systemd test
	report=$work/report.txt
	raw=$work/report.raw
	console=$work/console.log
	rm -f "$raw" "$report" "$console" "$work/ansible.log" "$work/ansible.report"
	: >"$raw"

	command -v ansible-playbook >/dev/null || die "ansible-playbook is missing (make ansible-deps)"
	port=$(free_port)
	ansible_when_ready "$raw" "$port" &
	watcher=$!
	log "booting the $suite root with systemd as PID 1 under TCG ($KVER), sshd on 127.0.0.1:$port, timeout ${timeout_s}s"
	t0=$(now)
	set +e
	# shellcheck disable=SC2046
	timeout --kill-after=10 "$timeout_s" "$qemu" $(boot_args "$img" "$port") \
		-append "$(kernel_cmdline)" \
		-serial stdio -serial "file:$raw" </dev/null 2>&1 | tee "$console"
	qrc=${PIPESTATUS[0]}
	# The watcher's timeout ends ansible/test/vm.sh with it.
	pkill -TERM -P "$watcher" 2>/dev/null
	kill "$watcher" 2>/dev/null
	wait "$watcher" 2>/dev/null
	set -e
	if [ -f "$work/ansible.log" ]; then
		log "Ansible on the host (ansible/test/vm.sh):"
		cat "$work/ansible.log"
	fi
	tr -d '\r' <"$raw" >"$report"
	log "qemu exited with status $qrc after $(since "$t0")s; report: $report, console: $console"

	if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
		die "the VM timed out after ${timeout_s}s (VM_SYSTEMD_TIMEOUT) and was killed"
	fi
	grep -q '^NRVM-INIT' "$report" || die "the initramfs did not run (qemu status $qrc); see the console above"
	grep -q '^NRVM-SWITCH-ROOT' "$report" || die "the initramfs did not switch to the root; see the console above"
	grep -qx "NRVM-BEGIN $nonce" "$report" || die "systemd did not start the test unit; see the console above"
	grep -qx "NRVM-END $nonce" "$report" || die "the checks did not finish (guest crashed or powered off early; qemu status $qrc)"
	rc=$(awk -v end="NRVM-END $nonce" 'prev == end && /^EXIT=[0-9]+$/ { sub(/^EXIT=/, ""); print } { prev = $0 }' "$report")
	[ -n "$rc" ] || die "the report has no EXIT= line after its end marker"
	pass=$(grep -c '^PASS: ' "$report" || true)
	fail=$(grep -c '^FAIL: ' "$report" || true)
	if [ "$rc" = 0 ] && { [ "$fail" != 0 ] || [ "$pass" = 0 ]; }; then
		log "error: exit status 0 with $pass passed and $fail failed checks"
		rc=1
	fi
	[ "$rc" = 0 ] || log "FAIL: the systemd checks exited with status $rc"
	echo "vm-systemd: $pass checks passed, $fail failed ($(since "$tall")s in all)"
	exit "$rc"
}

case "${1:-}" in
root) cmd_root ;;
test) cmd_test_systemd ;;
shell) cmd_shell_systemd ;;
*)
	echo "usage: $0 root|test|shell" >&2
	exit 2
	;;
esac
