#!/bin/bash
# The collection against a real host over SSH, from this machine as the
# Ansible controller. The systemd VM (test/vm/systemd.sh) boots a Debian root
# with systemd and sshd on the VM kernel, and calls this script when the guest
# is ready. It checks what run.sh cannot on a shared machine:
#   - the role copies the .deb from the controller and installs it, the package
#     enables and starts netreconcile.service, and the role's handler reloads it
#     once for the files it changed;
#   - the fleet mesh (ansible/examples/fleet) converges on three namespaces of
#     the guest with the kernel's WireGuard module: handshakes and pings across
#     the mesh.
# Each playbook run costs minutes under TCG, so the rest (check mode, second
# runs, --limit, bad input) is left to run.sh, on this kernel.
#
#   ansible/test/vm.sh PORT KEY DEB REPORT
#
# PORT: the guest's sshd, forwarded to 127.0.0.1; KEY: a private key root
# accepts there; DEB: the package; REPORT: where the PASS:/FAIL: lines go (the
# VM copies them into its own report). The playbooks' output is printed.
# Exits 0 when every check held.
set -uo pipefail

port=${1:?usage: vm.sh PORT KEY DEB REPORT} key=${2:?} deb=$(readlink -f "${3:?}") report=${4:?}
here=$(cd "$(dirname "$0")" && pwd)
fleet=$(cd "$here/../examples/fleet" && pwd)
work=$(mktemp -d /tmp/ans-vm.XXXXXX)
chmod 700 "$work"
trap 'rm -rf "$work"' EXIT
: >"$report"
failures=0

out() { echo "$*" | tee -a "$report"; }
pass() { out "PASS: ansible: $*"; }
fail() {
	out "FAIL: ansible: $*"
	failures=$((failures + 1))
}
check() { # name command...
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}
ms() { date +%s%3N; }

# Bounded: a guest that stops answering fails the checks, it does not hang them.
ssh_timeouts="-o ConnectTimeout=30 -o ServerAliveInterval=15 -o ServerAliveCountMax=4"
# shellcheck disable=SC2206 # the options are words
ssh_opts=(-p "$port" -i "$key" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
	-o LogLevel=ERROR -o ControlMaster=auto -o ControlPersist=600 -o "ControlPath=$work/ssh-%C" $ssh_timeouts)
# g: a command in the guest, as root.
g() { ssh "${ssh_opts[@]}" root@127.0.0.1 "$@"; }
# g_until S SCRIPT: the shell test SCRIPT holds in the guest within S seconds
# of the guest's clock.
g_until() { g "end=\$((\$(date +%s) + $1)); until $2; do [ \$(date +%s) -ge \$end ] && exit 1; sleep 0.2; done"; }

export ANSIBLE_COLLECTIONS_PATH="$here/.."
export ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_DEPRECATION_WARNINGS=0
export ANSIBLE_LOCAL_TEMP="$work/ansible-local" ANSIBLE_REMOTE_TEMP=/tmp/ansible-remote
export ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 ANSIBLE_HOST_KEY_CHECKING=0
# One SSH connection for every task: each new one costs seconds under TCG.
export ANSIBLE_PIPELINING=1 ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=600 -o LogLevel=ERROR $ssh_timeouts"
# Key exchange and a module's start take seconds under TCG.
export ANSIBLE_TIMEOUT=60
export ANSIBLE_SSH_CONTROL_PATH_DIR="$work/cp"
export ANSIBLE_CACHE_PLUGIN=jsonfile ANSIBLE_CACHE_PLUGIN_CONNECTION="$work/facts" ANSIBLE_CACHE_PLUGIN_TIMEOUT=0
# No ansible.cfg of this machine's (./, ~/.ansible.cfg, /etc/ansible) applies.
: >"$work/ansible.cfg"
export ANSIBLE_CONFIG="$work/ansible.cfg"

host_vars="ansible_host: 127.0.0.1, ansible_port: $port, ansible_user: root, ansible_ssh_private_key_file: $key"
recap() { grep -E "^$1 +: ok=" "$2" | sed 's/  */ /g'; }
changed() { grep -qE "^$1 +: ok=[0-9]+ +changed=[1-9][0-9]* +unreachable=0 +failed=0" "$2"; }
unchanged() { grep -qE "^$1 +: ok=[0-9]+ +changed=0 +unreachable=0 +failed=0" "$2"; }
play() { # log, ansible-playbook arguments: the run's time goes to the log's last line
	local log=$1 t0 rc=0
	shift
	t0=$(ms)
	ansible-playbook "$@" >"$log" 2>&1 || rc=$?
	echo "(ansible-playbook: exit $rc in $(($(ms) - t0)) ms)" >>"$log"
	sed "s|^|  $(basename "$log" .log): |" "$log"
	return $rc
}
took() { tail -n 1 "$1" | sed 's/.* in \([0-9]*\) ms)$/\1 ms/'; }

# ---------------------------------------------------------------------------
# The role installs the package and drives the service.
cat >"$work/role-inventory.yml" <<EOF
all:
  hosts:
    nrvm: {$host_vars}
EOF
reloads() { g "journalctl -b -u netreconcile.service -o cat | grep -c 'reload requested'"; }
role_state() { # address: the service holds the role's files in the kernel, with it
	g_until 10 "ip -4 addr show dev nrrole0 2>/dev/null | grep -q 'inet $1 ' &&
		[ \$(ip -4 addr show dev nrrole0 | grep -c 'inet ') = 1 ] &&
		ip link show nrrole0 | grep -q 'mtu 1400 ' &&
		ip route show table 176 | grep -q '^198\\.51\\.100\\.0/24 via 10\\.76\\.0\\.254 dev nrrole0'"
}
role() { play "$work/$1.log" -i "$work/role-inventory.yml" "$here/vm-role.yml" -e "deb=$deb" "${@:2}"; }

# The guest answers (sshd may still be starting).
t0=$(date +%s)
until g true 2>/dev/null; do
	if [ $(($(date +%s) - t0)) -ge 120 ]; then
		fail "no SSH connection to the guest in 120 s"
		exit 1
	fi
	sleep 2
done
g 'dpkg-query -W netreconcile' >/dev/null 2>&1 && fail "netreconcile is installed before the role ran"
if role role1; then
	check "role, first run: changed ($(recap nrvm "$work/role1.log"), $(took "$work/role1.log"))" changed nrvm "$work/role1.log"
else
	fail "role, first run failed"
	exit 1
fi
check "role, first run: the package copied from the controller is installed ($(g "dpkg-query -W -f '\${Version} \${Status}' netreconcile"))" \
	g "dpkg-query -W -f '\${Status}' netreconcile | grep -q 'install ok installed'"
check "role, first run: netreconcile.service enabled and active" \
	g 'systemctl is-enabled -q netreconcile.service && systemctl is-active -q netreconcile.service'
# The package's postinst enabled and started the unit: the role's task found
# nothing to do.
task_ok() { # task, log: the role's task reported ok (not changed) on nrvm
	grep -A1 -F "TASK [netreconcile.net.netreconcile : $1]" "$2" | grep -q '^ok: \[nrvm\]'
}
check "role, first run: the package enabled and started the unit (the role's \"Run the service\" task: ok, not changed)" \
	task_ok "Run the service" "$work/role1.log"
check "role, first run: the service applied the role's files (nrrole0 10.76.0.1/24 mtu 1400, 198.51.100.0/24 table 176)" \
	role_state 10.76.0.1/24
# The files changed from the package's: the handler reloaded the service once
# (systemd 252's reload returns before the daemon logs it).
g_until 10 "[ \$(journalctl -b -u netreconcile.service -o cat | grep -c 'reload requested') -ge 1 ]"
r0=$(reloads)
check "role, first run: the handler reloaded the service once (reload requests: $r0)" test "$r0" = 1
# The second run (changed=0, the handler not notified) is make ansible-test's
# (run.sh): a playbook run costs minutes here.
# ---------------------------------------------------------------------------
# The fleet mesh on the kernel's WireGuard: three namespaces on one bridge,
# each an inventory host reached over the same SSH connection.
g 'set -e
ip netns add ans-lan
ip -n ans-lan link add ans-br type bridge
ip -n ans-lan link set ans-br up
# The LAN'"'"'s own address: the rollout'"'"'s controller pings the hosts from here.
ip -n ans-lan addr add 192.168.77.254/24 dev ans-br
i=0
for h in a b c; do
	i=$((i + 1))
	ip netns add ans-$h
	ip -n ans-lan link add ans-p$h type veth peer name up0 netns ans-$h
	ip -n ans-lan link set ans-p$h master ans-br up
	ip -n ans-$h addr add 192.168.77.$i/24 dev up0
	ip -n ans-$h link set up0 up
	ip -n ans-$h link set lo up
	ip -n ans-$h route add default dev up0
	mkdir -p -m 700 /root/mesh/$h
done' || fail "mesh: the guest's namespaces"
# The controller reaches a host as the rollout's health check asks: from the
# guest's LAN, over the SSH connection.
cat >"$work/guest-ping" <<EOF
#!/bin/sh
exec ssh $(printf '%q ' "${ssh_opts[@]}") root@127.0.0.1 ip netns exec ans-lan ping -c 1 -W 2 "\$1"
EOF
chmod 0755 "$work/guest-ping"
# mesh_inventory [HOST]: the three hosts; HOST, when given, drops its mesh
# traffic (the rollout's broken change).
mesh_inventory() {
	printf 'all:\n  children:\n    mesh:\n      hosts:\n'
	i=0
	for h in a b c; do
		i=$((i + 1))
		cat <<EOF
        ans-$h:
          ansible_host: 127.0.0.1
          ansible_port: $port
          ansible_user: root
          ansible_ssh_private_key_file: $key
          mesh_index: $i
          mesh_link: answg-$h
          mesh_key: /root/mesh/$h/kubespan.key
          mesh_uplink: up0
          mesh_userspace: false
          mesh_targets: all
          netreconcile_netns: ans-$h
          netreconcile_config_dir: /root/mesh/$h/etc
          netreconcile_state_dir: /root/mesh/$h/state
          netreconcile_service: false
          netreconcile_apply: true
          rollout_reach_command: [$work/guest-ping, 192.168.77.$i]
EOF
		if [ "${1:-}" = "ans-$h" ]; then echo "          mesh_prerouting_extra: ['iifname \"answg-$h\" drop']"; fi
	done
}
minv="$work/mesh-inventory.yml"
mesh_inventory >"$minv"
# serial is a play keyword: Ansible templates it without host variables, so
# the one batch of three hosts is an extra variable.
mesh() { play "$work/$1.log" -i "$minv" "$fleet/mesh.yml" -e mesh_serial=3 "${@:2}"; }
peers() { g "ip netns exec ans-$1 wg show answg-$1 dump" | awk -F'\t' 'NF == 8 {print $1, $3, $4}' | sort; }

if ! mesh mesh1 --diff; then
	fail "mesh, first run failed"
	exit 1
fi
for h in a b c; do
	check "mesh, first run: ans-$h changed ($(recap "ans-$h" "$work/mesh1.log"))" changed "ans-$h" "$work/mesh1.log"
	check "mesh: ans-$h's answg-$h is the kernel's WireGuard with 2 peers" \
		eval "g 'ip -n ans-$h -d link show answg-$h' | grep -q 'wireguard' && [ \"\$(peers $h | wc -l)\" = 2 ]"
done
check "mesh: no wireguard-go process (the kernel module serves every device)" test "$(g 'pgrep -xc wireguard-go')" = 0
if g_until 30 "[ \$(for h in a b c; do ip netns exec ans-\$h wg show answg-\$h latest-handshakes; done | awk '\$2 != 0' | wc -l) = 6 ]"; then
	pass "mesh: a handshake with each of its 2 peers on every host"
else
	fail "mesh: no handshake on every peer within 30 s"
	g 'for h in a b c; do ip netns exec ans-$h wg show answg-$h; done' | sed 's/^/    /' | grep -v 'private key'
fi
# mesh_targets: all puts every peer in the target sets at once (the second
# run that adds the peers once Up, as run.sh does, is not needed to route).
for pair in a:b:2 b:c:3 c:a:1; do
	IFS=: read -r from to n <<<"$pair"
	src=$(($(printf '%d' "'$from") - 96))
	rx0=$(g "ip netns exec ans-$to wg show answg-$to transfer" | awk '{s += $2} END {print s + 0}')
	g "ip netns exec ans-$from ping -c 3 -i 0.3 -w 10 -q -I 10.100.0.$src 10.100.0.$n" >/dev/null ||
		fail "mesh: ping ans-$from -> 10.100.0.$n"
	rx1=$(g "ip netns exec ans-$to wg show answg-$to transfer" | awk '{s += $2} END {print s + 0}')
	# Three echo requests through the tunnel: 3 x (84 + 32) bytes at least;
	# a keepalive or a handshake alone is less.
	check "mesh: ans-$from -> ans-$to (10.100.0.$n) over WireGuard ($((rx1 - rx0)) bytes received)" test $((rx1 - rx0)) -ge 348
done
keys=0
for h in a b c; do
	k=$(g "cat /root/mesh/$h/kubespan.key")
	[ -n "$k" ] || { fail "mesh: no key in /root/mesh/$h/kubespan.key"; continue; }
	keys=$((keys + 1))
	if grep -qF -- "${k%=}" "$work"/*.log "$report"; then fail "mesh: ans-$h's private key is in the output"; fi
done
pass "mesh: $keys private keys made on their hosts, none in the playbooks' output ($(cat "$work"/*.log | wc -c) bytes)"
# ---------------------------------------------------------------------------
# The fleet rollout (rollout.yml) on the same kernel WireGuard mesh, one host a
# batch: the canary ans-a passes and is confirmed; ans-b's change drops its
# mesh traffic, so its peers do not answer: it is never confirmed and rolls
# back by itself at its deadline; the budget (0) is spent and ans-c is never
# touched. make ansible-test runs the six-host rollouts on wireguard-go.
mesh_inventory ans-b >"$work/rollout-inventory.yml"
mtu() { g "ip -n ans-$1 link show answg-$1" | sed -n 's/.* mtu \([0-9]*\) .*/\1/p'; }
c_state() { g 'ip -n ans-c -d link show answg-c; ip netns exec ans-c wg show answg-c dump | cut -f1-4; ip netns exec ans-c nft list ruleset; sha256sum /root/mesh/c/etc/netreconcile.yaml /root/mesh/c/etc/conf.d/*' 2>&1; }
c_before=$(c_state)
# confirm_within: under TCG a host's apply, checks and confirmation take
# tens of seconds; the broken host waits out the rest of its window.
play "$work/rollout.log" -i "$work/rollout-inventory.yml" "$fleet/rollout.yml" -e mesh_mtu=1380 \
	-e '{"rollout_batches": [1, 1, 1]}' -e rollout_confirm_within=90 -e "rollout_summary_file=$work/rollout.json" ||
	fail "rollout: the playbook failed"
summary_is() { # the summary's lists are these
	/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
want = {"confirmed": ["ans-a"], "failed": ["ans-b"], "rolled_back": ["ans-b"], "untouched": ["ans-c"]}
sys.exit(1 if any(sorted(s.get(k) or []) != v for k, v in want.items()) else 0)' "$work/rollout.json"
}
check "rollout: the summary says ans-a confirmed, ans-b failed and rolled back, ans-c untouched ($(tr -d '\n ' <"$work/rollout.json" 2>/dev/null | cut -c1-300))" summary_is
a_holds() {
	[ "$(mtu a)" = 1380 ] &&
		g "netreconcile status --netns ans-a --state-dir /root/mesh/a/state -o json" | grep -q '"state": "confirmed"' &&
		g "grep -q 'mtu: 1380' /root/mesh/a/etc/conf.d/50-mesh.yaml"
}
check "rollout: ans-a (the canary) holds the change on the kernel's WireGuard (mtu $(mtu a)), confirmed, its files installed" a_holds
b_back() {
	[ "$(mtu b)" = 1420 ] &&
		! g 'ip netns exec ans-b nft list ruleset' | grep -q 'iifname "answg-b" drop' &&
		! g "grep -qs 'mtu: 1380' /root/mesh/b/etc/conf.d/50-mesh.yaml"
}
check "rollout: ans-b rolled back by itself (mtu $(mtu b), its mesh no longer dropped, its files not installed)" b_back
c_after=$(c_state)
check "rollout: ans-c untouched (its link, peers, ruleset and files as before)" test "$c_before" = "$c_after"
check "rollout: no wireguard-go process (the kernel module serves every device)" test "$(g 'pgrep -xc wireguard-go')" = 0
g 'for h in a b c; do ip netns del ans-$h; done; ip netns del ans-lan; rm -rf /root/mesh' || fail "mesh: cleanup"

[ "$failures" = 0 ]
