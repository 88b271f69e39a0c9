#!/usr/bin/env bash
# Real-kernel VM harness: boots a Debian cloud kernel in qemu (TCG) with a busybox
# initramfs and runs the e2e test binary (./test/e2e) inside it. See test/vm/README.md.
#
#   vm.sh deps     install host tools, download and unpack busybox-static and the kernel
#   vm.sh test     build the binaries and the initramfs, boot once, run the tests;
#                  exits with the tests' status, non-zero too when the VM fails to boot,
#                  times out, or the report lacks its markers
#   vm.sh shell    the same image, but an interactive shell instead of the tests
#   vm.sh initrd   only build the initramfs (prints its path)
#
# Settings (environment; mk/vm.mk passes the make variables of the same names):
#   VMRUN            -test.run regexp for the e2e tests (empty: all)
#   VMFLAGS          more test binary flags, space separated (e.g. "-test.count=2 -test.short")
#   VM_TIMEOUT       seconds before qemu is killed (default 480)
#   VM_MEM, VM_SMP   guest memory in MiB (default 1024) and CPUs (default 2)
#   VM_KERNEL_PKG    kernel package (default linux-image-cloud-amd64, a metapackage)
#   VM_KERNEL_SUITE  take the kernel from this suite of the host's Debian mirror instead
#                    of the host's apt sources, e.g. bookworm-backports (6.12)
#   VM_APPEND        extra kernel command line
#   VM_CACHE         cache directory (default .cache/vm in the repository)
#   VM_REFRESH=1     ask apt for the newest packages even if it was asked less than 12 h ago
#   VM_APT_UPDATE=1  also refresh the private apt lists of VM_KERNEL_SUITE
#   GO               go command (default go)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
GO=${GO:-go}
cache=${VM_CACHE:-$repo/.cache/vm}
kernel_pkg=${VM_KERNEL_PKG:-linux-image-cloud-amd64}
kernel_suite=${VM_KERNEL_SUITE:-}
timeout_s=${VM_TIMEOUT:-480}
mem=${VM_MEM:-1024}
smp=${VM_SMP:-2}
qemu="qemu-system-x86_64"
work=$cache/work
root=""  # the initramfs tree, under $work
nonce="" # marks this run's report lines
export PATH=$PATH:/usr/sbin:/sbin

log() { echo "vm: $*" >&2; }
die() {
	echo "vm: error: $*" >&2
	exit 1
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------- host tools

# command -> Debian package that provides it on the host.
host_tools=(
	"$qemu:qemu-system-x86"
	"depmod:kmod"
	"cpio:cpio"
	"gzip:gzip"
	"dpkg-deb:dpkg"
	"apt-get:apt"
	"nft:nftables"
	"ip:iproute2"
	"wg:wireguard-tools"
)

host_updated=0
host_apt_update() {
	[ "$host_updated" = 1 ] && return
	log "apt-get update"
	apt-get update -qq >/dev/null || die "apt-get update failed"
	host_updated=1
}

install_host_tools() {
	local missing=() t
	for t in "${host_tools[@]}"; do
		command -v "${t%%:*}" >/dev/null || missing+=("${t#*:}")
	done
	[ ${#missing[@]} = 0 ] && return
	if [ "$(id -u)" != 0 ]; then
		die "missing host packages: ${missing[*]} (run as root, or: sudo apt-get install --no-install-recommends ${missing[*]})"
	fi
	host_apt_update
	log "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install ${missing[*]} failed"
}

# ---------------------------------------------------------------- guest packages
#
# The kernel and busybox-static are downloaded as .deb files into the cache and
# unpacked there: nothing is installed on the host for the guest.

apt_opts=()
apt_updated=0
apt_update() {
	[ "$apt_updated" = 1 ] && return
	if [ ${#apt_opts[@]} = 0 ]; then
		host_apt_update
	else
		log "apt-get update ($kernel_suite)"
		apt-get "${apt_opts[@]}" update -qq >/dev/null || die "apt-get update ($kernel_suite) failed"
	fi
	apt_updated=1
}

# A private apt configuration with one suite (e.g. bookworm-backports) of the mirror the
# host already uses for its base release, so that the host's apt setup is left alone.
use_suite() {
	local suite=$1 codename uri keyring
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	# shellcheck disable=SC2016 # apt's own $(FIELD) syntax
	uri=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 'Created-By: Packages' |
		awk -v c="$codename" '$1 == c { print $2; exit }')
	[ -n "$uri" ] || die "no apt source for $codename on this host to derive $suite from"
	mkdir -p "$cache/apt/$suite/lists/partial" "$cache/apt/$suite/cache/archives/partial"
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	if [ -f "$keyring" ]; then
		echo "deb [signed-by=$keyring] $uri $suite main" >"$cache/apt/$suite/sources.list"
	else
		echo "deb $uri $suite main" >"$cache/apt/$suite/sources.list"
	fi
	apt_opts=(
		-o "Dir::Etc::SourceList=$cache/apt/$suite/sources.list"
		-o "Dir::Etc::SourceParts=/nonexistent"
		-o "Dir::State::Lists=$cache/apt/$suite/lists"
		-o "Dir::Cache=$cache/apt/$suite/cache"
	)
	# A private list is fetched once, then again by `make vm-deps VM_APT_UPDATE=1`.
	if ! compgen -G "$cache/apt/$suite/lists/*_Packages*" >/dev/null || [ "${VM_APT_UPDATE:-}" = 1 ]; then
		apt_update
	fi
}

candidate() { # package -> candidate version, or nothing
	apt-cache "${apt_opts[@]}" policy "$1" 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }'
}

# resolve PACKAGE -> "name version", following a metapackage to the image it depends on.
resolve() {
	local pkg=$1 ver dep
	ver=$(candidate "$pkg")
	if [ -z "$ver" ]; then
		apt_update
		ver=$(candidate "$pkg")
	fi
	[ -n "$ver" ] || return 1
	dep=$(apt-cache "${apt_opts[@]}" depends "$pkg=$ver" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	if [ -n "$dep" ]; then
		pkg=$dep
		ver=$(candidate "$pkg")
		[ -n "$ver" ] || return 1
	fi
	echo "$pkg $ver"
}

fetch_deb() { # name version -> path of the .deb in the cache
	local pkg=$1 ver=$2 arch f
	arch=$(dpkg --print-architecture)
	f="$cache/debs/${pkg}_${ver//:/%3a}_${arch}.deb"
	if [ ! -s "$f" ]; then
		mkdir -p "$cache/debs"
		log "apt-get download $pkg=$ver"
		(cd "$cache/debs" && apt-get "${apt_opts[@]}" -o APT::Sandbox::User=root -qq download "$pkg=$ver") >&2 || {
			apt_updated=0
			apt_update
			(cd "$cache/debs" && apt-get "${apt_opts[@]}" -o APT::Sandbox::User=root -qq download "$pkg=$ver") >&2
		} || die "apt-get download $pkg=$ver failed"
	fi
	echo "$f"
}

unpack_kernel() { # deb dir
	local deb=$1 dir=$2 tmp kv
	[ -f "$dir/.ok" ] && return
	tmp=$dir.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "unpack $(basename "$deb")"
	dpkg-deb -x "$deb" "$tmp"
	# Newer packages keep modules in /usr/lib/modules; depmod -b wants <base>/lib/modules.
	[ -d "$tmp/lib/modules" ] || ln -s usr/lib "$tmp/lib"
	kv=$(ls "$tmp/lib/modules")
	if [ -z "$kv" ] || [ ! -f "$tmp/boot/vmlinuz-$kv" ]; then
		die "$deb holds no kernel and modules"
	fi
	# busybox insmod takes plain .ko files only.
	find "$tmp/lib/modules/$kv" -name '*.ko.xz' -exec xz -d {} +
	find "$tmp/lib/modules/$kv" -name '*.ko.zst' -exec zstd -q -d --rm {} +
	find "$tmp/lib/modules/$kv" -name '*.ko.gz' -exec gzip -d {} +
	depmod -b "$tmp" "$kv"
	echo "$kv" >"$tmp/.kversion"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	touch "$dir/.ok"
}

unpack_busybox() { # deb dir
	local deb=$1 dir=$2
	[ -f "$dir/.ok" ] && return
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp"
	dpkg-deb -x "$deb" "$dir.tmp"
	[ -x "$dir.tmp/bin/busybox" ] || die "$deb holds no bin/busybox"
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
	touch "$dir/.ok"
}

# Which kernel and busybox this cache uses, per kernel source: written by deps, read by test.
current_env() { echo "$cache/current${kernel_suite:+-$kernel_suite}.env"; }

cmd_deps() {
	local t0 env kname kver bname bver kdeb bdeb kdir bdir
	t0=$(now)
	install_host_tools
	mkdir -p "$cache"
	env=$(current_env)

	# apt look-ups cost about a second each: a recent resolution is reused.
	if [ "${VM_REFRESH:-}" != 1 ] && [ -n "$(find "$env" -mmin -720 2>/dev/null)" ]; then
		# shellcheck disable=SC1090
		. "$env"
		if [ -f "${KERNEL_DIR:-/nonexistent}/.ok" ] && [ -f "${BUSYBOX_DIR:-/nonexistent}/.ok" ]; then
			log "deps cached: ${KERNEL_PKG:-} ${KERNEL_VER:-} (resolved less than 12 h ago; VM_REFRESH=1 asks apt again)"
			return
		fi
	fi

	# busybox-static always comes from the host's own sources.
	if read -r bname bver < <(resolve busybox-static); then
		bdeb=$(fetch_deb "$bname" "$bver")
		bdir=$cache/busybox/${bver//:/_}
		unpack_busybox "$bdeb" "$bdir"
	fi
	[ -n "$kernel_suite" ] && use_suite "$kernel_suite"
	if read -r kname kver < <(resolve "$kernel_pkg"); then
		kdeb=$(fetch_deb "$kname" "$kver")
		kdir=$cache/kernel/${kname}_${kver//:/_}
		unpack_kernel "$kdeb" "$kdir"
	fi
	if [ -z "${kdir:-}" ] || [ -z "${bdir:-}" ]; then
		# Offline, or the package is gone from the mirror: keep what the cache has.
		[ -f "$env" ] || die "apt cannot resolve busybox-static and $kernel_pkg and nothing is cached; check the apt sources"
		log "warning: apt cannot resolve the packages; using the cached ones in $env"
		return
	fi
	printf 'KERNEL_DIR=%q\nKERNEL_PKG=%q\nKERNEL_VER=%q\nKVER=%q\nBUSYBOX_DIR=%q\n' \
		"$kdir" "$kname" "$kver" "$(cat "$kdir/.kversion")" "$bdir" >"$env.tmp"
	mv "$env.tmp" "$env"
	log "deps ready in $(since "$t0")s: $kname $kver, busybox-static $bver"
}

# ---------------------------------------------------------------- initramfs

load_env() {
	local env
	env=$(current_env)
	[ -f "$env" ] || die "no VM kernel in $cache; run: make vm-deps${kernel_suite:+ VM_KERNEL_SUITE=$kernel_suite}"
	# shellcheck disable=SC1090
	. "$env"
	: "${KERNEL_DIR:?}" "${KERNEL_PKG:?}" "${KERNEL_VER:?}" "${KVER:?}" "${BUSYBOX_DIR:?}"
	if [ ! -f "$KERNEL_DIR/.ok" ] || [ ! -f "$BUSYBOX_DIR/.ok" ]; then
		die "cache $cache is incomplete; run: make vm-deps"
	fi
	command -v "$qemu" >/dev/null || die "$qemu not found; run: make vm-deps"
}

# copy_elf SRC [DST]: a dynamically linked program with the libraries ldd names, at the
# same paths as on the host.
copy_elf() {
	local src=$1 dst=${2:-$1} lib
	install -D -m 0755 "$src" "$root$dst"
	for lib in $(ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		[ -e "$root$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
	done
}

# Modules: the closure (from modules.dep) of the load list and of every module under the
# trees in modules.txt; prints the include list to $work/mods.include and the boot load
# order to $work/mods.load.
resolve_modules() {
	local kmods=$1 list=${2:-$here/modules.txt}
	awk -v inc="$work/mods.include" -v order="$work/mods.load" -v builtin="$kmods/modules.builtin" '
		function key(p,   n) { n = p; sub(/.*\//, "", n); sub(/\.ko$/, "", n); gsub(/-/, "_", n); return n }
		function emit(p, out,   d, n, j) {
			if ((out, p) in done) return
			done[out, p] = 1
			n = split(dep[p], d, " ")
			for (j = 1; j <= n; j++) emit(d[j], out)
			print p > out
		}
		FNR == NR {
			if ($1 == "load") loads[++nl] = $2
			else if ($1 == "tree") trees[++nt] = $2
			next
		}
		{
			p = $1; sub(/:$/, "", p)
			dep[p] = ""
			for (i = 2; i <= NF; i++) dep[p] = dep[p] " " $i
			name[key(p)] = p
			all[++na] = p
		}
		END {
			while ((getline line < builtin) > 0) isbuiltin[key(line)] = 1
			for (i = 1; i <= nl; i++) {
				k = key(loads[i])
				if (k in name) { emit(name[k], order); emit(name[k], inc) }
				else if (!(k in isbuiltin)) { print "vm: error: module " loads[i] " is not in this kernel" > "/dev/stderr"; bad = 1 }
			}
			for (i = 1; i <= na; i++)
				for (j = 1; j <= nt; j++)
					if (all[i] == trees[j] || index(all[i], trees[j] "/") == 1) emit(all[i], inc)
			close(order); close(inc)
			exit bad
		}
	' <(grep -v '^#' "$list") "$kmods/modules.dep"
	touch "$work/mods.load"
}

build_go() {
	cd "$repo"
	rm -f "$work/netreconcile" "$work/e2e.test"
	CGO_ENABLED=0 "$GO" build -trimpath -o "$work/netreconcile" ./cmd/netreconcile
	compgen -G 'test/e2e/*_test.go' >/dev/null || die "no tests in ./test/e2e"
	CGO_ENABLED=0 "$GO" test -c -trimpath -o "$work/e2e.test" ./test/e2e
	[ -x "$work/e2e.test" ] || die "go test -c ./test/e2e produced no binary"
}

cmd_initrd() {
	local mode=${1:-test} t0 kmods a tool f
	load_env
	t0=$(now)
	mkdir -p "$work"
	build_go
	local tbuild
	tbuild=$(since "$t0")

	root=$work/root
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,run,tmp,root,var,etc/nrvm,lib/modules,repo/bin,repo/test/e2e}
	ln -s ../run "$root/var/run"

	# busybox and its applets (the real tools below replace some of them).
	install -m 0755 "$BUSYBOX_DIR/bin/busybox" "$root/bin/busybox"
	for a in $("$root/bin/busybox" --list-full); do
		[ "$a" = linuxrc ] && continue
		[ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
	done
	install -m 0755 "$here/init" "$root/init"

	# Real nft, ip and wg from the host's packages (Debian's, same release).
	for tool in nft:/usr/sbin/nft ip:/usr/sbin/ip wg:/usr/bin/wg; do
		f=$(command -v "${tool%%:*}") || die "${tool%%:*} not found on the host; run: make vm-deps"
		rm -f "$root${tool#*:}"
		copy_elf "$(readlink -f "$f")" "${tool#*:}"
	done
	ln -sf /usr/sbin/ip "$root/sbin/ip"
	for f in /etc/protocols /etc/services /etc/iproute2 /usr/share/iproute2; do
		[ -e "$f" ] && mkdir -p "$root$(dirname "$f")" && cp -a "$f" "$root$f"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\n' >"$root/etc/group"
	printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"

	# Kernel modules.
	kmods=$KERNEL_DIR/lib/modules/$KVER
	resolve_modules "$kmods"
	mkdir -p "$root/lib/modules/$KVER"
	(cd "$kmods" && tar -cf - -T "$work/mods.include" modules.order modules.builtin modules.builtin.modinfo) |
		(cd "$root/lib/modules/$KVER" && tar -xf -)
	depmod -b "$root" "$KVER"
	cp "$work/mods.load" "$root/etc/nrvm/modules.load"

	# Payload, laid out like the repository.
	install -m 0755 "$work/e2e.test" "$root/repo/test/e2e/e2e.test"
	[ -f "$work/netreconcile" ] && install -m 0755 "$work/netreconcile" "$root/repo/bin/netreconcile"
	[ -d "$repo/test/e2e/testdata" ] && cp -a "$repo/test/e2e/testdata" "$root/repo/test/e2e/"
	[ -d "$repo/examples" ] && cp -a "$repo/examples" "$root/repo/"

	# Run settings.
	echo "$mode" >"$root/etc/nrvm/mode"
	nonce=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
	echo "$nonce" >"$root/etc/nrvm/nonce"
	printf '%s\n' "${VMRUN:-}" >"$root/etc/nrvm/run"
	# The test binary's own timeout fires first, so a hung test prints its goroutines.
	echo "$((timeout_s > 120 ? timeout_s - 60 : timeout_s * 3 / 4))s" >"$root/etc/nrvm/timeout"
	: >"$root/etc/nrvm/flags"
	# shellcheck disable=SC2086
	[ -n "${VMFLAGS:-}" ] && printf '%s\n' ${VMFLAGS} >"$root/etc/nrvm/flags"

	# cpio newc, gzip -1: the guest unpacks it under TCG, where a fast level wins.
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		gzip -1 >"$work/initrd.img.tmp"
	mv "$work/initrd.img.tmp" "$work/initrd.img"
	log "initramfs $(du -h "$work/initrd.img" | cut -f1) ($(wc -l <"$work/mods.include") modules, $(wc -l <"$work/mods.load") at boot) built in $(since "$t0")s (go build ${tbuild}s)"
}

# ---------------------------------------------------------------- boot

qemu_args() {
	echo -accel tcg -cpu max -m "$mem" -smp "$smp" -nodefaults -no-reboot -display none
}

cmd_shell() {
	[ -t 0 ] || die "vm-shell needs a terminal"
	cmd_initrd shell
	log "booting $KERNEL_PKG $KERNEL_VER; leave with 'poweroff -f' (or Ctrl-a x)"
	# shellcheck disable=SC2046
	exec "$qemu" $(qemu_args) \
		-kernel "$KERNEL_DIR/boot/vmlinuz-$KVER" -initrd "$work/initrd.img" \
		-append "console=ttyS0 quiet panic=-1 no_timer_check ${VM_APPEND:-}" \
		-serial mon:stdio -serial null
}

cmd_test() {
	local t0 report raw console watcher qrc tinit up passed failed skipped rc failed_mods
	cmd_initrd test
	report=$work/report.txt
	raw=$work/report.raw
	console=$work/console.log
	rm -f "$raw" "$report" "$console" "$work/init.time"
	: >"$raw"

	log "booting $KERNEL_PKG $KERNEL_VER ($KVER) under TCG, timeout ${timeout_s}s${VMRUN:+, -test.run \"$VMRUN\"}"
	t0=$(now)
	# Wall-clock time until init runs, taken from the report as it is written.
	(
		while ! grep -qa '^NRVM-INIT' "$raw" 2>/dev/null; do sleep 0.1; done
		since "$t0" >"$work/init.time"
	) &
	watcher=$!

	set +e
	# shellcheck disable=SC2046
	timeout --kill-after=10 "$timeout_s" "$qemu" $(qemu_args) \
		-kernel "$KERNEL_DIR/boot/vmlinuz-$KVER" -initrd "$work/initrd.img" \
		-append "console=ttyS0 quiet panic=-1 no_timer_check ${VM_APPEND:-}" \
		-serial stdio -serial "file:$raw" </dev/null 2>&1 | tee "$console"
	qrc=${PIPESTATUS[0]}
	set -e
	kill "$watcher" 2>/dev/null || true
	wait "$watcher" 2>/dev/null || true

	tr -d '\r' <"$raw" >"$report"
	tinit=$(cat "$work/init.time" 2>/dev/null || true)
	up=$(sed -n 's/^NRVM-INIT uptime=\([^ ]*\).*/\1/p' "$report")
	log "qemu exited with status $qrc after $(since "$t0")s${tinit:+; init reached after ${tinit}s wall clock, ${up}s guest uptime}"
	log "report: $report, console: $console"

	if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
		die "the VM timed out after ${timeout_s}s (VM_TIMEOUT) and was killed"
	fi
	grep -q '^NRVM-INIT' "$report" || die "the VM did not reach init (qemu status $qrc); see the console above"
	grep -qx "NRVM-BEGIN $nonce" "$report" || die "init did not start the tests; see the console above"
	grep -qx "NRVM-END $nonce" "$report" || die "the test run did not finish (guest crashed or powered off early; qemu status $qrc)"
	# The status is the line right after this run's end marker.
	rc=$(awk -v end="NRVM-END $nonce" 'prev == end && /^EXIT=[0-9]+$/ { sub(/^EXIT=/, ""); print } { prev = $0 }' "$report")
	[ -n "$rc" ] || die "the report has no EXIT= line after its end marker"

	failed_mods=$(sed -n 's/^NRVM-MODULES-FAILED //p' "$report")
	[ -z "$failed_mods" ] || log "error: boot modules failed to load: $failed_mods"
	passed=$(grep -c '^--- PASS: ' "$report" || true)
	failed=$(grep -c '^--- FAIL: ' "$report" || true)
	skipped=$(grep -c '^--- SKIP: ' "$report" || true)
	if [ "$rc" = 0 ] && [ $((passed + failed)) = 0 ]; then
		if [ -z "${VMRUN:-}" ]; then
			log "error: no e2e test ran"
			rc=1
		else
			log "warning: no e2e test matches VMRUN='$VMRUN'"
		fi
	fi
	[ "$rc" = 0 ] || log "FAIL: e2e tests in the VM exited with status $rc"
	echo "vm-e2e: $passed passed, $failed failed, $skipped skipped"
	exit "$rc"
}

# Sourced by test/vm/systemd.sh for its functions: no command then.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "${1:-}" in
deps) cmd_deps ;;
test) cmd_test ;;
shell) cmd_shell ;;
initrd)
	cmd_initrd test
	echo "$work/initrd.img"
	;;
*)
	echo "usage: $0 deps|test|shell|initrd" >&2
	exit 2
	;;
esac
