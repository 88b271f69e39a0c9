#!/bin/bash
# make ansible-test: the collection against the real ansible-core, with
# `connection: local` and each "host" a network namespace (ans-*).
#
#   ansible/test/run.sh BINARY
#
# Every check that does not hold fails the script (exit 1) with what was
# seen; nothing is skipped silently. The namespaces, the wireguard-go
# processes they hold and the work directory are removed at the end.
set -euo pipefail

bin=$(readlink -f "${1:?usage: run.sh NETRECONCILE-BINARY}")
here=$(cd "$(dirname "$0")" && pwd)
coll=$(cd "$here/../ansible_collections/netreconcile/net" && pwd)
fleet=$(cd "$here/../examples/fleet" && pwd)
work=$(mktemp -d /tmp/ans-test.XXXXXX)
chmod 700 "$work"
start=$(date +%s)
namespaces="ans-s ans-x ans-lan ans-a ans-b ans-c ans-rlan ans-r1 ans-r2 ans-r3 ans-r4 ans-r5 ans-r6"
# Set once this run has checked that no other holds the namespaces.
owner=
created=
failures=0

export ANSIBLE_COLLECTIONS_PATH="$here/.."
export ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 ANSIBLE_RETRY_FILES_ENABLED=0
export ANSIBLE_LOCAL_TEMP="$work/ansible-local" ANSIBLE_REMOTE_TEMP="$work/ansible-remote"
export ANSIBLE_CACHE_PLUGIN=jsonfile ANSIBLE_CACHE_PLUGIN_CONNECTION="$work/facts" ANSIBLE_CACHE_PLUGIN_TIMEOUT=0
export ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 ANSIBLE_DEPRECATION_WARNINGS=0
unset ANSIBLE_CONFIG

log() { printf '\n=== %s (%ss)\n' "$*" $(( $(date +%s) - start )); section_failures=$failures; }
# pass prints a section's result when nothing in the section failed.
pass() { if [ "$failures" = "${section_failures:-0}" ]; then echo "$*"; fi; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
die() { echo "FAIL: $*" >&2; exit 1; }

# Inline configurations without inline_dir go to the module's default,
# /var/lib/netreconcile-ansible/NETNS-HASH: removed at the end unless the
# directory was there before.
inline_base=/var/lib/netreconcile-ansible
[ -e "$inline_base" ] && inline_base_kept=1 || inline_base_kept=

cleanup() {
	local rc=$?
	# A second run started meanwhile stops at the check below, before
	# owning anything: it removes neither the inline base nor any
	# namespace but those it made itself.
	[ -z "$owner" ] || [ -n "$inline_base_kept" ] || rm -rf "$inline_base"
	for ns in $created; do
		[ -e "/run/netns/$ns" ] || continue
		# wireguard-go exits with its link; the PIDs left are ours.
		for l in $(ip -n "$ns" -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^answg-' || true); do
			ip -n "$ns" link del "$l" 2>/dev/null || true
		done
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
	[ -n "${KEEP_WORK:-}" ] && echo "work directory kept: $work" || rm -rf "$work"
	exit $rc
}
trap cleanup EXIT

for ns in $namespaces; do
	[ -e "/run/netns/$ns" ] && die "namespace $ns exists: another run, or a leftover (ip netns del $ns)"
done
owner=1
netns_add() { ip netns add "$1" && created="$created $1"; }

# The kernel as the tools show it, for before/after comparisons. The
# WireGuard columns that change with traffic (handshakes, bytes) and the
# key columns are left out.
dump() {
	local ns=$1
	{
		ip -n "$ns" -j -d link show
		ip -n "$ns" -j addr show
		for f in -4 -6; do ip -n "$ns" -j $f route show table all; ip -n "$ns" -j $f rule show; done
		ip netns exec "$ns" nft -j list ruleset
	} | /usr/bin/python3 -c '
import json, sys
# Counters and timers the kernel moves by itself; an IPv6 address leaving
# duplicate address detection (its tentative flag) and the routes the
# kernel then adds for it are made by the kernel too.
VOLATILE = ("operstate", "linkmode", "valid_life_time", "preferred_life_time", "tentative")
def kernels_own(x):
    return isinstance(x, dict) and x.get("protocol") == "kernel" and ":" in x.get("dst", "")
def clean(v):
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items() if k not in VOLATILE and not k.endswith("_timer")}
    if isinstance(v, list):
        return [clean(x) for x in v if not kernels_own(x)]
    return v
dec, text, i = json.JSONDecoder(), sys.stdin.read(), 0
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i == len(text):
        break
    v, i = dec.raw_decode(text, i)
    print(json.dumps(clean(v), indent=1, sort_keys=True))'
	# Our devices only: wireguard-go's sockets are shared by every namespace,
	# so `wg show all` would list other namespaces' devices too.
	local dev
	for dev in $(ip -n "$ns" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^answg-' || true); do
		# wireguard-go lists peers in no fixed order.
		ip netns exec "$ns" wg show "$dev" dump | awk -F'\t' -v d="$dev" 'NF == 4 {print d, $2, $3, $4} NF == 8 {print d, $1, $3, $4, $8}' | sort
	done
}

# Kernel events while a command runs: rtnetlink and nftables.
monitored() {
	local ns=$1 out=$2; shift 2
	ip -n "$ns" monitor link address route rule >"$out.ip" 2>&1 & local p1=$!
	ip netns exec "$ns" nft monitor >"$out.nft" 2>&1 & local p2=$!
	sleep 0.5
	local rc=0
	"$@" || rc=$?
	sleep 0.5
	kill "$p1" "$p2" 2>/dev/null || true
	wait "$p1" "$p2" 2>/dev/null || true
	return $rc
}

play() { ansible-playbook "$@"; }

# ---------------------------------------------------------------------------
log "ansible-core"
ansible --version | sed -n 1p

log "ansible-doc renders every module"
for m in apply confirm wireguard_key; do
	out=$(ansible-doc -t module "netreconcile.net.$m" 2>&1) || die "ansible-doc netreconcile.net.$m: $out"
	for section in "OPTIONS" "EXAMPLES" "RETURN VALUES"; do
		grep -q "^$section" <<<"$out" || fail "ansible-doc netreconcile.net.$m has no $section"
	done
	# Markup ansible-core 2.14 does not know (O(), V(), RV(), E(), P()) is
	# printed raw: only C(), I(), B(), M(), U() and L() render everywhere.
	if raw=$(grep -nE '(^|[^A-Za-z_])(O|V|RV|E|P)\(' <<<"$out"); then
		fail "ansible-doc netreconcile.net.$m shows raw markup: $raw"
	fi
	echo "netreconcile.net.$m: $(wc -l <<<"$out") lines"
done
ansible-doc -t role netreconcile.net.netreconcile >/dev/null 2>&1 || echo "(ansible-doc -t role: the role has no meta/argument_specs.yml)"

log "what the modules pass to the binary: ids checked, -- before positional arguments"
PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$here/argv_test.py" "$(cd "$here/.." && pwd)" || fail "argv_test.py"

# ---------------------------------------------------------------------------
log "one namespace: ans-s"
netns_add ans-s
mkdir -m 700 "$work/s"
peer_priv=$(wg genkey)
peer_pub=$(wg pubkey <<<"$peer_priv")
# The device's key exists before the check-mode run, as on a host the key
# module has seen: netreconcile plans a device from its key file.
(umask 077; wg genpsk >"$work/s/peer.psk"; wg genkey >"$work/s/wg.key")
inv="$work/inventory.yml"
cat >"$inv" <<EOF
all:
  hosts:
    ans-s: {ansible_connection: local}
EOF
vars=(-i "$inv" -e "work=$work" -e "bin=$bin" -e "peer_pub=$peer_pub")

log "check mode: the change is reported, the kernel untouched"
dump ans-s >"$work/s.before"
play "${vars[@]}" "$here/single.yml" --check --diff -e expect=changed -e "out=$work/s.check.json" >"$work/s.check.log" 2>&1 ||
	{ cat "$work/s.check.log"; die "check-mode run failed"; }
dump ans-s >"$work/s.after-check"
cmp -s "$work/s.before" "$work/s.after-check" || { diff "$work/s.before" "$work/s.after-check" | head -40 || true; fail "check mode changed the kernel"; }
grep -q '^+ link ans-br0 (bridge mtu 1400)$' "$work/s.check.log" || fail "--check --diff does not show the planned link"
grep -q '^+ route 198.51.100.0/24' "$work/s.check.log" || fail "--check --diff does not show the planned route"
grep -q '"link ans-br0": {' "$work/s.check.log" || fail "--diff shows no before/after of link ans-br0"
pass "check mode: $(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["plan"]))' "$work/s.check.json") operations planned, kernel dump unchanged"

log "first run: changed"
play "${vars[@]}" "$here/single.yml" --diff -e expect=changed -e "out=$work/s.first.json" >"$work/s.first.log" 2>&1 ||
	{ cat "$work/s.first.log"; die "first run failed"; }
grep -q 'ans-s *: ok=4 *changed=1 ' "$work/s.first.log" ||
	{ tail -5 "$work/s.first.log"; fail "first run: expected changed=1 (the state applied)"; }
/usr/bin/python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
if a["plan"] != b["plan"] or a["diff"] != b["diff"] or not a["plan"]:
    print(json.dumps(a, indent=1)); print(json.dumps(b, indent=1)); sys.exit(1)
print("check mode and the first run: the same %d operations and the same diff" % len(a["plan"]))' "$work/s.check.json" "$work/s.first.json" ||
	fail "check mode and the first run differ"
ip -n ans-s -d link show ans-br0 | grep -q 'mtu 1400' || fail "ans-br0 not made"
ip -n ans-s route show 198.51.100.0/24 | grep -q 'proto 245' || fail "route not made"

log "check mode on the applied state: the same diff as the run"
# A change now exists (key and state there): check mode and the run must
# show the same diff for the same change.
play "${vars[@]}" "$here/single.yml" --check --diff -e expect=changed -e s_mtu=1300 -e "out=$work/s.check2.json" >"$work/s.check2.log" 2>&1 ||
	{ cat "$work/s.check2.log"; die "check-mode run failed"; }
dump ans-s >"$work/s.c2a"
play "${vars[@]}" "$here/single.yml" --diff -e expect=changed -e s_mtu=1300 -e "out=$work/s.mtu.json" >"$work/s.mtu.log" 2>&1 ||
	{ cat "$work/s.mtu.log"; die "MTU run failed"; }
/usr/bin/python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if a["diff"] == b["diff"] and a["plan"] == b["plan"] and a["plan"] else 1)' "$work/s.check2.json" "$work/s.mtu.json" ||
	fail "check mode and run differ: $(cat "$work/s.check2.json" "$work/s.mtu.json")"
sed -n '/^--- before/,/^Plan:/p' "$work/s.mtu.log"
grep -q '^~ link ans-br0$' "$work/s.mtu.log" && grep -q '^    mtu: 1400 -> 1300$' "$work/s.mtu.log" || fail "--diff does not show the MTU change"
ip -n ans-s link show ans-br0 | grep -q 'mtu 1300' || fail "MTU not changed"

log "second run: ok, no kernel write"
dump ans-s >"$work/s.before2"
monitored ans-s "$work/s.mon" play "${vars[@]}" "$here/single.yml" -e expect=ok -e s_mtu=1300 -e "out=$work/s.second.json" >"$work/s.second.log" 2>&1 ||
	{ cat "$work/s.second.log"; die "second run failed"; }
dump ans-s >"$work/s.after2"
grep -q 'ans-s *: ok=4 *changed=0 ' "$work/s.second.log" || { tail -4 "$work/s.second.log"; fail "second run: expected changed=0"; }
cmp -s "$work/s.before2" "$work/s.after2" || { diff "$work/s.before2" "$work/s.after2" | head -40 || true; fail "second run changed the kernel dump"; }
[ ! -s "$work/s.mon.ip" ] || { cat "$work/s.mon.ip"; fail "second run: ip monitor saw kernel events"; }
[ ! -s "$work/s.mon.nft" ] || { cat "$work/s.mon.nft"; fail "second run: nft monitor saw events"; }
pass "second run: changed=0, dumps equal, ip monitor and nft monitor silent"

log "an invalid variable fails with its position; the namespace is unchanged"
dump ans-s >"$work/s.before3"
if play "${vars[@]}" "$here/single.yml" -e expect=ok -e s_mtu=20 -e "out=$work/s.bad.json" >"$work/s.bad.log" 2>&1; then
	fail "an invalid MTU did not fail the play"
fi
grep -o '<inline config>:[0-9]*:[0-9]*: links.ans-br0.mtu: [^"]*' "$work/s.bad.log" | head -1 | grep . ||
	{ cat "$work/s.bad.log"; fail "the failure gives no position"; }
dump ans-s >"$work/s.after3"
cmp -s "$work/s.before3" "$work/s.after3" || fail "the failed run changed the kernel"

log "a plan made in check mode is applied as shown; a stale one is refused"
play "${vars[@]}" "$here/single.yml" --check --diff -e expect=changed -e s_mtu=1250 -e "s_plan=$work/s/reviewed.plan" -e "out=$work/s.plan-check.json" >"$work/s.plan-check.log" 2>&1 ||
	{ cat "$work/s.plan-check.log"; die "check mode with a plan"; }
[ -s "$work/s/reviewed.plan" ] && [ "$(stat -c %a "$work/s/reviewed.plan")" = 600 ] || fail "check mode saved no plan (mode 0600)"
play "${vars[@]}" "$here/single.yml" -e expect=changed -e s_mtu=1250 -e "s_plan=$work/s/reviewed.plan" -e "out=$work/s.plan-run.json" >"$work/s.plan-run.log" 2>&1 ||
	{ cat "$work/s.plan-run.log"; die "the reviewed plan did not apply"; }
/usr/bin/python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if a["plan"] == b["plan"] and a["plan"] else 1)' "$work/s.plan-check.json" "$work/s.plan-run.json" ||
	fail "the applied plan is not the reviewed one: $(cat "$work/s.plan-check.json" "$work/s.plan-run.json")"
ip -n ans-s link show ans-br0 | grep -q 'mtu 1250' || fail "the reviewed plan did not set the MTU"
play "${vars[@]}" "$here/single.yml" --check -e expect=changed -e s_mtu=1200 -e "s_plan=$work/s/stale.plan" -e "out=$work/s.stale-check.json" >"$work/s.stale-check.log" 2>&1 ||
	{ cat "$work/s.stale-check.log"; die "check mode with a plan"; }
# The kernel changed by hand after the review.
ip -n ans-s link set ans-br0 mtu 1210
dump ans-s >"$work/s.before-stale"
if play "${vars[@]}" "$here/single.yml" -e expect=changed -e s_mtu=1200 -e "s_plan=$work/s/stale.plan" -e "out=$work/s.stale.json" >"$work/s.stale.log" 2>&1; then
	fail "a stale plan was applied"
fi
grep -q '"stale": true' "$work/s.stale.log" && grep -q 'mtu: 1210 -> 1200' "$work/s.stale.log" ||
	{ cat "$work/s.stale.log"; fail "the stale plan's refusal does not say what changed"; }
dump ans-s >"$work/s.after-stale"
cmp -s "$work/s.before-stale" "$work/s.after-stale" || fail "a refused plan changed the kernel"
grep -o '"msg": "the saved plan [^"]*' "$work/s.stale.log" | head -1 | cut -c1-400
play "${vars[@]}" "$here/single.yml" -e expect=changed -e s_mtu=1300 -e "out=$work/s.back.json" >"$work/s.back.log" 2>&1 ||
	{ cat "$work/s.back.log"; die "back to MTU 1300"; }
pass "check mode saved the plan; the run applied the same ops; a plan gone stale by a change by hand was refused and the kernel dump kept"

log "max_disruption refuses a plan above it and names the op; strict fails on a warning; neither changes anything"
dump ans-s >"$work/s.before-md"
# A base chain's new priority replaces its table.
if play "${vars[@]}" "$here/single.yml" -e expect=changed -e s_mtu=1300 -e s_out_priority=mangle -e s_max_disruption=in-place -e "out=$work/s.md.json" >"$work/s.md.log" 2>&1; then
	fail "max_disruption in-place let a table be replaced"
fi
grep -q '"refused": \[' "$work/s.md.log" && grep -q 'table_replaced' "$work/s.md.log" && grep -q 'nft table inet ans_test' "$work/s.md.log" ||
	{ cat "$work/s.md.log"; fail "max_disruption: the refusal does not name the op and its disruption"; }
grep -o '"msg": "[^"]*disrupt more than[^"]*' "$work/s.md.log" | head -1 | cut -c1-300
if play "${vars[@]}" "$here/single.yml" -e expect=changed -e s_mtu=1300 -e s_gateway=192.0.2.1 -e s_strict=true -e "out=$work/s.strict.json" >"$work/s.strict.log" 2>&1; then
	fail "strict let a plan with a warning apply"
fi
grep -q 'warning(s) and --strict, nothing was changed' "$work/s.strict.log" && grep -q 'no address the file declares reaches gateway 192.0.2.1' "$work/s.strict.log" ||
	{ cat "$work/s.strict.log"; fail "strict: the failure does not name the warning"; }
dump ans-s >"$work/s.after-md"
cmp -s "$work/s.before-md" "$work/s.after-md" || { diff "$work/s.before-md" "$work/s.after-md" | head -20; fail "a refused plan changed the kernel"; }
play "${vars[@]}" "$here/single.yml" --check -e expect=changed -e s_mtu=1300 -e s_gateway=192.0.2.1 -e "out=$work/s.warn.json" >"$work/s.warn.log" 2>&1 ||
	{ cat "$work/s.warn.log"; fail "check mode with a warning failed"; }
grep -q '^\[WARNING\]: route 198.51.100.0/24' "$work/s.warn.log" || { cat "$work/s.warn.log"; fail "the plan's warning is not an Ansible warning"; }
play "${vars[@]}" "$here/single.yml" -e expect=changed -e s_mtu=1300 -e s_out_priority=mangle -e s_max_disruption=table-replaced -e "out=$work/s.md2.json" >"$work/s.md2.log" 2>&1 ||
	{ cat "$work/s.md2.log"; fail "max_disruption table-replaced refused a table replaced"; }
# nft's output whole before grep -q: nft writes it in pieces, and one
# written after grep -q matched and exited is a SIGPIPE, which pipefail
# makes the pipeline's failure (5 in 50 such runs here).
grep -q 'priority mangle' <<<"$(ip netns exec ans-s nft list chain inet ans_test out)" || fail "max_disruption table-replaced: the table was not replaced"
play "${vars[@]}" "$here/single.yml" -e expect=changed -e s_mtu=1300 -e "out=$work/s.md3.json" >"$work/s.md3.log" 2>&1 ||
	{ cat "$work/s.md3.log"; die "back to priority filter"; }
pass "max_disruption in-place refused the table's replacement, naming it; strict refused the gateway's warning; the kernel dump kept; the warning shown as an Ansible warning; table-replaced let it through"

log "a conflict fails the task and names the object"
netns_add ans-x
ip -n ans-x link add ans-fx type bridge
cat >"$work/conflict.yml" <<EOF
- hosts: ans-s
  gather_facts: false
  tasks:
    - netreconcile.net.apply:
        config: {version: 1, links: {ans-fx: {kind: bridge, mtu: 1300}, ans-br9: {kind: bridge}}}
        netns: ans-x
        binary: "$bin"
        state_dir: "$work/state2"
EOF
if play -i "$inv" "$work/conflict.yml" >"$work/conflict.log" 2>&1; then fail "a conflict did not fail"; fi
grep -q '"conflicts": \[' "$work/conflict.log" && grep -q 'ans-fx' "$work/conflict.log" ||
	{ cat "$work/conflict.log"; fail "the conflict is not named"; }
grep -A3 '"conflicts": \[' "$work/conflict.log" | head -3

# with_group MODE COMMAND...: COMMAND where /etc/group has the packaged
# service's group netreconcile (MODE with) or has none (without), in a mount
# namespace of its own: the machine's /etc/group is never changed, and the
# checks hold whether or not the package is installed here. The apply
# module gives its inline files to that group, read-only, where it exists.
group_gid=
for g in $(seq 64990 -1 64900); do
	getent group "$g" >/dev/null || { group_gid=$g; break; }
done
with_group() {
	local mode=$1 view="$work/group.$1"
	shift
	grep -v '^netreconcile:' /etc/group >"$view"
	[ "$mode" = without ] || echo "netreconcile:x:$group_gid:" >>"$view"
	chmod 644 "$view"
	unshare --mount --propagation private sh -c 'mount --bind "$1" /etc/group && shift && exec "$@"' sh "$view" "$@"
}

# confirmed MODE: a safe apply rolled back unless confirmed, kept when
# confirmed, and the inline files' modes, without or with the group.
confirmed() {
	local mode=$1 d="$work/confirm-$1" want="700 0:0 600 0:0" seen got
	[ "$mode" = with ] && want="750 0:$group_gid 640 0:$group_gid"
	mkdir -m 700 "$d"
	seen=$(with_group "$mode" getent group netreconcile | cut -d: -f3 || true)
	[ "$seen" = "$([ "$mode" = with ] && echo "$group_gid")" ] ||
		{ fail "confirm ($mode the group): the group netreconcile is '$seen' in the mount namespace"; return; }
	# A change that is never confirmed is rolled back; one confirmed stays.
	cat >"$d/confirm.yml" <<EOF
- hosts: ans-s
  gather_facts: false
  tasks:
    - name: Apply, to be rolled back unless confirmed
      netreconcile.net.apply:
        config: {version: 1, links: {ans-br7: {kind: bridge, mtu: 1400}}}
        netns: ans-x
        binary: "$bin"
        state_dir: "$d/state"
        inline_dir: "$d/inline"
        confirm_within: "{{ within }}"
      register: applied
    - ansible.builtin.assert:
        that: [applied is changed, applied.transaction_id is not none]
    - ansible.builtin.meta: reset_connection
    - name: Confirm
      netreconcile.net.confirm:
        transaction: "{{ applied.transaction_id }}"
        netns: ans-x
        binary: "$bin"
        state_dir: "$d/state"
      when: confirm | bool
EOF
	# Safe apply rolls back to the last confirmed configuration: a plain
	# apply records one (nothing declared: it prunes what earlier tests
	# left in ans-x), and the namespace is dumped after it.
	cat >"$d/baseline.yml" <<EOF
- hosts: ans-s
  gather_facts: false
  tasks:
    - name: A known-good configuration to roll back to
      netreconcile.net.apply:
        config: {version: 1}
        netns: ans-x
        binary: "$bin"
        state_dir: "$d/state"
        inline_dir: "$d/inline"
EOF
	with_group "$mode" ansible-playbook -i "$inv" "$d/baseline.yml" >"$work/baseline-$mode.log" 2>&1 ||
		{ cat "$work/baseline-$mode.log"; fail "confirm ($mode the group): the known-good apply"; }
	dump ans-x >"$d/x.before"
	with_group "$mode" ansible-playbook -i "$inv" "$d/confirm.yml" -e within=5s -e confirm=false >"$work/confirm1-$mode.log" 2>&1 ||
		{ cat "$work/confirm1-$mode.log"; fail "confirm ($mode the group): unconfirmed apply"; }
	sleep 10
	dump ans-x >"$d/x.after"
	cmp -s "$d/x.before" "$d/x.after" || fail "confirm ($mode the group): an apply never confirmed was not rolled back"
	# The rollback wrote the known-good inline file back where the module
	# keeps it (inline_dir), not to a temporary directory gone since.
	[ -f "$d/inline/netreconcile.yaml" ] && ! grep -q ans-br7 "$d/inline/netreconcile.yaml" ||
		{ cat "$d/inline/netreconcile.yaml"; fail "confirm ($mode the group): the rollback did not restore the inline file in inline_dir"; }
	# Nobody else may write the inline files, and only the service's
	# group, where it exists, may read them.
	got="$(stat -c '%a %u:%g' "$d/inline") $(stat -c '%a %u:%g' "$d/inline/netreconcile.yaml")"
	[ "$got" = "$want" ] || fail "confirm ($mode the group): inline_dir and its file are $got, want $want"
	with_group "$mode" ansible-playbook -i "$inv" "$d/confirm.yml" -e within=20s -e confirm=true >"$work/confirm2-$mode.log" 2>&1 ||
		{ cat "$work/confirm2-$mode.log"; fail "confirm ($mode the group): confirmed apply"; }
	sleep 22
	ip -n ans-x link show ans-br7 >/dev/null 2>&1 || fail "confirm ($mode the group): a confirmed apply was rolled back"
	pass "confirm ($mode the group netreconcile): the unconfirmed apply rolled back, the confirmed one kept; inline_dir and its file $got"
}

if "$bin" help apply | grep -q -- '--confirm-within'; then
	[ -n "$group_gid" ] || die "no free gid for the mount namespace's group netreconcile"
	for mode in without with; do
		log "confirmed apply (apply --confirm-within), $mode the group netreconcile"
		confirmed "$mode"
	done
else
	fail "confirm: $bin has no apply --confirm-within"
fi

log "wireguard_key: refuses a key file others can read, or one holding no key; the binary makes the key, without wg"
cat >"$work/keys.yml" <<EOF
- hosts: ans-s
  gather_facts: false
  tasks:
    - name: Others may read it
      netreconcile.net.wireguard_key: {path: "$work/s/open.key", binary: "$bin"}
      register: open
      ignore_errors: true
    - ansible.builtin.assert:
        that: [open is failed, "'mode 0644' in open.msg"]
    - name: A file that holds no key
      netreconcile.net.wireguard_key: {path: "$work/s/garbage.key", binary: "$bin"}
      register: garbage
      ignore_errors: true
    - ansible.builtin.assert:
        that: [garbage is failed, "'does not hold a WireGuard private key' in garbage.msg"]
    - name: Without wg on PATH
      netreconcile.net.wireguard_key: {path: "$work/s/nr/nr.key", binary: "$bin"}
      environment: {PATH: /nonexistent}
      register: made
    - ansible.builtin.assert:
        that: [made is changed, "made.generator == 'netreconcile wireguard genkey'", "made.public_key | length == 44",
               "made.fingerprint is match('SHA256:')"]
    - ansible.builtin.copy: {content: "{{ made.public_key }}\n", dest: "$work/s/nr.pub", mode: "0600"}
    - name: Again, the same key, unchanged
      netreconcile.net.wireguard_key: {path: "$work/s/nr/nr.key", binary: "$bin"}
      register: again
    - ansible.builtin.assert:
        that: [again is not changed, again.public_key == made.public_key, again.generator is not defined]
EOF
wg genkey 2>/dev/null >"$work/s/open.key"; chmod 644 "$work/s/open.key"
(umask 077; echo "not-a-key-$(wg genkey)" >"$work/s/garbage.key")
play -i "$inv" "$work/keys.yml" >"$work/keys.log" 2>&1 || { cat "$work/keys.log"; fail "wireguard_key checks"; }
[ "$(stat -c %a "$work/s/nr/nr.key")" = 600 ] && [ "$(stat -c %a "$work/s/nr")" = 700 ] || fail "the new key or its directory is not private (0600, 0700)"
[ "$(wg pubkey <"$work/s/nr/nr.key")" = "$(cat "$work/s/nr.pub")" ] || fail "the module's public key differs from wg pubkey's"
! ls -a "$work/s/nr" | grep -q '^\.nr\.key\.' || fail "a temporary key file was left behind"
pass "refused a 0644 key and a file holding no key; the binary made a 0600 key without wg, and wg pubkey agrees with its public key"

log "the role: files validated as a whole, handler only on a change"
play "${vars[@]}" "$here/role.yml" >"$work/role1.log" 2>&1 || { cat "$work/role1.log"; die "role: first run"; }
grep -q 'RUNNING HANDLER \[netreconcile.net.netreconcile : Reload netreconcile\]' "$work/role1.log" || fail "role: first run did not notify the handler"
"$bin" validate -c "$work/etc/netreconcile.yaml" >/dev/null || fail "role: the installed files are not valid"
play "${vars[@]}" "$here/role.yml" >"$work/role2.log" 2>&1 || { cat "$work/role2.log"; die "role: second run"; }
grep -q 'changed=0 ' "$work/role2.log" || fail "role: second run changed something"
! grep -q 'RUNNING HANDLER' "$work/role2.log" || fail "role: the handler ran with no file changed"
sums=$(sha256sum "$work"/etc/netreconcile.yaml "$work"/etc/conf.d/*)
if play "${vars[@]}" "$here/role.yml" -e r_mtu=5 >"$work/role3.log" 2>&1; then fail "role: an invalid drop-in variable did not fail"; fi
grep -q 'conf.d/20-routes.yaml:[0-9]*:[0-9]*: routes\[0\].mtu' "$work/role3.log" || { cat "$work/role3.log"; fail "role: no position"; }
grep -o '[^ "]*conf.d/20-routes.yaml:[0-9]*:[0-9]*: routes\[0\].mtu[^"\\]*' "$work/role3.log" | head -1 || true
[ "$sums" = "$(sha256sum "$work"/etc/netreconcile.yaml "$work"/etc/conf.d/*)" ] || fail "role: a bad file landed"
pass "role: handler on the first run only; an invalid drop-in variable failed at its position and nothing landed"

# ---------------------------------------------------------------------------
log "the mesh: three namespaces on one LAN"
netns_add ans-lan
ip -n ans-lan link add ans-br type bridge
ip -n ans-lan link set ans-br up
i=0
for h in a b c; do
	i=$((i + 1))
	netns_add "ans-$h"
	ip -n ans-lan link add "ans-p$h" type veth peer name up0 netns "ans-$h"
	ip -n ans-lan link set "ans-p$h" master ans-br up
	ip -n "ans-$h" addr add "192.168.77.$i/24" dev up0
	ip -n "ans-$h" link set up0 up
	ip -n "ans-$h" link set lo up
	# A default route as a host has one: the first lookup of a mesh
	# address finds it, then the output chain marks the packet and the
	# 32500 rule sends it to table 180 (S1).
	ip -n "ans-$h" route add default dev up0
	mkdir -m 700 "$work/$h"
done
minv="$work/mesh-inventory.yml"
{
	echo "all:"
	echo "  children:"
	echo "    mesh:"
	echo "      hosts:"
	i=0
	for h in a b c; do
		i=$((i + 1))
		cat <<EOF
        ans-$h:
          ansible_connection: local
          mesh_index: $i
          mesh_link: answg-$h
          mesh_key: $work/$h/kubespan.key
          mesh_uplink: up0
          mesh_userspace: true
          netreconcile_netns: ans-$h
          netreconcile_binary: $bin
          netreconcile_config_dir: $work/$h/etc
          netreconcile_state_dir: $work/$h/state
          netreconcile_wireguard_go: /usr/bin/wireguard-go
          netreconcile_service: false
          netreconcile_apply: true
EOF
	done
} >"$minv"
mesh() { play -i "$minv" "$fleet/mesh.yml" "$@"; }
peers_of() { ip netns exec "ans-$1" wg show "answg-$1" dump | awk -F'\t' 'NF == 8 {print $1, $3, $4, $8}' | sort; }

log "mesh, first run: changed"
mesh --diff >"$work/mesh1.log" 2>&1 || { cat "$work/mesh1.log"; die "mesh: first run"; }
for h in a b c; do grep -q "ans-$h *: ok=[0-9]* *changed=[1-9]" "$work/mesh1.log" || fail "mesh: ans-$h not changed"; done
for h in a b c; do
	n=$(peers_of $h | wc -l)
	[ "$n" = 2 ] || fail "mesh: ans-$h has $n peers, want 2"
done

log "mesh: WireGuard handshakes"
ok=0
for _ in $(seq 1 30); do
	ok=1
	for h in a b c; do
		ip netns exec "ans-$h" wg show "answg-$h" latest-handshakes | awk '$2 == 0 {bad=1} END {exit bad}' || ok=0
	done
	[ $ok = 1 ] && break
	sleep 1
done
[ $ok = 1 ] || { for h in a b c; do ip netns exec "ans-$h" wg show "answg-$h"; done; die "mesh: no handshake on every peer within 30 s"; }
for h in a b c; do echo "ans-$h: $(ip netns exec "ans-$h" wg show "answg-$h" latest-handshakes | awk '{print substr($1,1,8) "… " $2}' | tr '\n' ' ')"; done

log "mesh, second run: the peers are Up, only the target sets change"
mesh -v >"$work/mesh2.log" 2>&1 || { cat "$work/mesh2.log"; die "mesh: second run"; }
# The plans the apply module returned (-v prints each result on one line).
kinds=$(/usr/bin/python3 -c '
import collections, json, sys
kinds = collections.Counter()
for line in open(sys.argv[1]):
    if "\"plan_text\"" in line and " => " in line:
        for op in json.loads(line.split(" => ", 1)[1])["plan"]:
            kinds[op["action"] + " " + op["kind"]] += 1
print(", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items())))' "$work/mesh2.log")
echo "operations: $kinds"
if [ -z "$kinds" ]; then
	fail "mesh: the second run planned nothing (no peer Up?)"
elif tr ',' '\n' <<<"$kinds" | grep -v ' nft_element$' | grep -q .; then
	fail "mesh: the second run changed more than set elements: $kinds"
fi

log "mesh: pings across the mesh go through WireGuard"
for pair in a:b:2 b:c:3 c:a:1; do
	IFS=: read -r from to n <<<"$pair"
	src=$(( $(printf '%d' "'$from") - 96 ))
	rx0=$(ip netns exec "ans-$to" wg show "answg-$to" transfer | awk '{s += $2} END {print s + 0}')
	ip netns exec "ans-$from" ping -c 3 -i 0.3 -w 10 -q -I "10.100.0.$src" "10.100.0.$n" >/dev/null ||
		fail "mesh: ping ans-$from -> 10.100.0.$n"
	rx1=$(ip netns exec "ans-$to" wg show "answg-$to" transfer | awk '{s += $2} END {print s + 0}')
	[ "$rx1" -gt "$rx0" ] || fail "mesh: ans-$to received nothing over WireGuard from ans-$from"
	echo "ans-$from -> ans-$to (10.100.0.$n): ping answered, $((rx1 - rx0)) bytes received over WireGuard"
done

log "mesh, third run: ok, no kernel write (with -vvv, searched for keys)"
for h in a b c; do dump "ans-$h" >"$work/$h.before"; done
monitored ans-a "$work/a.mon" mesh -vvv >"$work/mesh3.log" 2>&1 || { tail -50 "$work/mesh3.log"; die "mesh: third run"; }
for h in a b c; do
	grep -q "ans-$h *: ok=[0-9]* *changed=0 " "$work/mesh3.log" || fail "mesh: third run changed ans-$h"
	dump "ans-$h" >"$work/$h.after"
	cmp -s "$work/$h.before" "$work/$h.after" || fail "mesh: third run changed ans-$h's kernel dump"
done
[ ! -s "$work/a.mon.ip" ] && [ ! -s "$work/a.mon.nft" ] || fail "mesh: third run: kernel events in ans-a: $(cat "$work/a.mon.ip" "$work/a.mon.nft")"
pass "third run: changed=0 on every host, dumps equal, ip and nft monitor silent on ans-a"

log "mesh: a run with --limit ans-a leaves the others' peers alone"
for h in b c; do peers_of $h >"$work/$h.peers"; done
peers_of a >"$work/a.peers"
mesh --limit ans-a -e mesh_mtu=1400 >"$work/mesh4.log" 2>&1 || { cat "$work/mesh4.log"; die "mesh: --limit run"; }
grep -q 'ans-a *: ok=[0-9]* *changed=[1-9]' "$work/mesh4.log" || fail "mesh: --limit run did not change ans-a"
! grep -Eq 'ans-[bc] *: ok' "$work/mesh4.log" || fail "mesh: --limit ans-a ran on other hosts"
ip -n ans-a link show answg-a | grep -q 'mtu 1400' || fail "mesh: ans-a's MTU not changed"
peers_of a | cmp -s - "$work/a.peers" || fail "mesh: --limit changed ans-a's own peers (the cache should keep them)"
for h in b c; do peers_of $h | cmp -s - "$work/$h.peers" || fail "mesh: --limit ans-a changed ans-$h's peers"; done
pass "--limit ans-a: ans-a changed (MTU), its 2 peers kept from the fact cache; ans-b and ans-c untouched"

# ---------------------------------------------------------------------------
log "rollout: six namespaces, a canary then batches of 2 and 3, a failure budget of 0"
netns_add ans-rlan
ip -n ans-rlan link add ans-rbr type bridge
ip -n ans-rlan link set ans-rbr up
ip -n ans-rlan addr add 192.168.78.254/24 dev ans-rbr
for i in 1 2 3 4 5 6; do
	netns_add "ans-r$i"
	ip -n ans-rlan link add "ans-rp$i" type veth peer name up0 netns "ans-r$i"
	ip -n ans-rlan link set "ans-rp$i" master ans-rbr up
	ip -n "ans-r$i" addr add "192.168.78.$i/24" dev up0
	ip -n "ans-r$i" link set up0 up
	ip -n "ans-r$i" link set lo up
	ip -n "ans-r$i" route add default dev up0
	mkdir -m 700 "$work/r$i"
done
# rinv [BROKEN...]: the inventory; BROKEN names the hosts whose change
# breaks their mesh (a rule dropping what comes in over it).
rinv() {
	echo "all:"
	echo "  children:"
	echo "    mesh:"
	echo "      hosts:"
	for i in 1 2 3 4 5 6; do
		cat <<EOF
        ans-r$i:
          ansible_connection: local
          mesh_index: $i
          mesh_link: answg-r$i
          mesh_key: $work/r$i/kubespan.key
          mesh_uplink: up0
          mesh_userspace: true
          mesh_targets: all
          netreconcile_netns: ans-r$i
          netreconcile_binary: $bin
          netreconcile_config_dir: $work/r$i/etc
          netreconcile_state_dir: $work/r$i/state
          netreconcile_wireguard_go: /usr/bin/wireguard-go
          netreconcile_service: false
          netreconcile_apply: true
          rollout_reach_command: [ip, netns, exec, ans-rlan, ping, -c, "1", -W, "2", 192.168.78.$i]
EOF
		case " $* " in *" ans-r$i "*) echo "          mesh_prerouting_extra: ['iifname \"answg-r$i\" drop']" ;; esac
	done
}
rinv >"$work/rollout-inventory.yml"
rinv ans-r3 >"$work/rollout-broken-inventory.yml"
# The health checks keep their defaults (5 tries, 2 s apart): on a loaded
# machine (a load of 44 on two cores) the canary's peers took longer than 2
# tries 1 s apart to answer through wireguard-go. The batch's slowest host
# (the broken one, about 20 s of checks) must end within confirm_within.
# Six forks: the six hosts of a task at once.
play -f 6 -i "$work/rollout-inventory.yml" "$fleet/mesh.yml" -e mesh_serial=6 >"$work/rollout-mesh.log" 2>&1 || { cat "$work/rollout-mesh.log"; die "rollout: the mesh"; }
for i in 1 2 3 4 5 6; do
	dump "ans-r$i" >"$work/r$i.before" 2>/dev/null
	sha256sum /var/lib/netreconcile-ansible/ans-r$i-*/netreconcile.yaml /var/lib/netreconcile-ansible/ans-r$i-*/conf.d/* >"$work/r$i.files"
done
rstart=$(date +%s)
# ans-r3 is in the second batch ([1, 2, 3]: ans-r1, then ans-r2 and ans-r3, then the rest).
play -f 6 -i "$work/rollout-broken-inventory.yml" "$fleet/rollout.yml" -e mesh_mtu=1380 -e '{"rollout_batches": [1, 2, 3]}' \
	-e rollout_confirm_within=60 -e "rollout_summary_file=$work/rollout.json" \
	>"$work/rollout.log" 2>&1 || { cat "$work/rollout.log"; fail "rollout: the playbook failed"; }
echo "rollout: $(( $(date +%s) - rstart )) s"
sed -n '/TASK \[Show it\]/,/^$/p' "$work/rollout.log" | grep -E '"(hold|failed|untouched)' || true
/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
want = {"confirmed": ["ans-r1", "ans-r2"], "failed": ["ans-r3"], "rolled_back": ["ans-r3"], "untouched": ["ans-r4", "ans-r5", "ans-r6"]}
bad = {k: s.get(k) for k, v in want.items() if sorted(s.get(k) or []) != v}
print(json.dumps(s, sort_keys=True))
sys.exit(1 if bad else 0)' "$work/rollout.json" || fail "rollout: the summary is not the expected one"
for i in 1 2; do
	ip -n "ans-r$i" link show "answg-r$i" | grep -q 'mtu 1380' || fail "rollout: ans-r$i (confirmed) does not hold the change"
	grep -q 'mtu: 1380' "$work/r$i/etc/conf.d/50-mesh.yaml" || fail "rollout: ans-r$i's files were not installed"
	"$bin" status --netns "ans-r$i" --state-dir "$work/r$i/state" -o json | grep -q '"state": "confirmed"' || fail "rollout: ans-r$i not confirmed"
done
ip -n ans-r3 link show answg-r3 | grep -q 'mtu 1420' || fail "rollout: ans-r3 was not rolled back (MTU)"
if grep -q 'iifname "answg-r3" drop' <<<"$(ip netns exec ans-r3 nft list ruleset)"; then fail "rollout: ans-r3 still drops its mesh"; fi
if grep -qs 'mtu: 1380' "$work/r3/etc/conf.d/50-mesh.yaml"; then fail "rollout: ans-r3's files were installed"; fi
for i in 4 5 6; do
	dump "ans-r$i" >"$work/r$i.after" 2>/dev/null
	cmp -s "$work/r$i.before" "$work/r$i.after" || { diff "$work/r$i.before" "$work/r$i.after" | head -20; fail "rollout: ans-r$i was touched"; }
	sha256sum -c --quiet "$work/r$i.files" || fail "rollout: ans-r$i's inline files changed"
done
pass "rollout: ans-r1 (canary) and ans-r2 confirmed with MTU 1380 and their files; ans-r3 failed its mesh check, was never confirmed and rolled back by itself at its deadline; ans-r4..6 untouched (kernel dumps and files equal)"

# The summary as docs/rollout.md shows it: its lines of the run's summary
# (the JSON's order of unanswered peers varies, so the debug lines only).
# shown LOG: the summary lines the run printed.
shown() { sed -n '/TASK \[Show it\]/,/^$/p' "$1" | grep -oE '"(hold the change|failed|untouched)[^"]*"' | tr -d '"'; }
# documented N: the summary lines of docs/rollout.md's Nth such block (in
# its code blocks only: prose may wrap onto a line starting with these words).
documented() { awk -v n="$1" '/^```/ {c = !c; next} c && /^hold the change/ {b++} c && b == n && /^(hold the change|failed|untouched)/' "$here/../../docs/rollout.md"; }
[ "$(shown "$work/rollout.log")" = "$(documented 1)" ] ||
	fail "rollout: docs/rollout.md shows another summary than the run's:$(printf '\n%s' "$(shown "$work/rollout.log")")"

log "rollout: the failure budget counts over the whole rollout (budget 1; batches [1, 2, 2, 1]; ans-r2 breaks in the second, ans-r4 in the third)"
# A budget per batch would let each of these batches' one failure pass and
# go on to ans-r6; counted over the rollout, the second failure stops it.
rinv ans-r2 ans-r4 >"$work/rollout-budget-inventory.yml"
dump ans-r6 >"$work/r6.before2" 2>/dev/null
sha256sum /var/lib/netreconcile-ansible/ans-r6-*/netreconcile.yaml /var/lib/netreconcile-ansible/ans-r6-*/conf.d/* "$work"/r6/etc/netreconcile.yaml "$work"/r6/etc/conf.d/* >"$work/r6.files2"
rstart=$(date +%s)
play -f 6 -i "$work/rollout-budget-inventory.yml" "$fleet/rollout.yml" -e mesh_mtu=1360 -e '{"rollout_batches": [1, 2, 2, 1]}' -e rollout_max_failures=1 \
	-e rollout_confirm_within=60 -e "rollout_summary_file=$work/rollout-budget.json" \
	>"$work/rollout-budget.log" 2>&1 || { cat "$work/rollout-budget.log"; fail "rollout (budget): the playbook failed"; }
echo "rollout (budget): $(( $(date +%s) - rstart )) s"
shown "$work/rollout-budget.log"
/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
want = {"confirmed": ["ans-r1", "ans-r3", "ans-r5"], "failed": ["ans-r2", "ans-r4"], "rolled_back": ["ans-r2", "ans-r4"], "untouched": ["ans-r6"]}
bad = {k: s.get(k) for k, v in want.items() if sorted(s.get(k) or []) != v}
print(json.dumps(s, sort_keys=True))
sys.exit(1 if bad else 0)' "$work/rollout-budget.json" || fail "rollout (budget): the summary is not the expected one"
[ "$(shown "$work/rollout-budget.log")" = "$(documented 2)" ] ||
	fail "rollout (budget): docs/rollout.md shows another summary than the run's"
for i in 1 3 5; do
	ip -n "ans-r$i" link show "answg-r$i" | grep -q 'mtu 1360' || fail "rollout (budget): ans-r$i (confirmed) does not hold the change"
	"$bin" status --netns "ans-r$i" --state-dir "$work/r$i/state" -o json | grep -q '"state": "confirmed"' || fail "rollout (budget): ans-r$i not confirmed"
done
# Each failed host is back at its own last confirmed MTU: ans-r2 at the
# first rollout's, ans-r4 at the mesh's.
ip -n ans-r2 link show answg-r2 | grep -q 'mtu 1380' || fail "rollout (budget): ans-r2 was not rolled back to MTU 1380"
ip -n ans-r4 link show answg-r4 | grep -q 'mtu 1420' || fail "rollout (budget): ans-r4 was not rolled back to MTU 1420"
for i in 2 4; do
	if grep -q "iifname \"answg-r$i\" drop" <<<"$(ip netns exec "ans-r$i" nft list ruleset)"; then fail "rollout (budget): ans-r$i still drops its mesh"; fi
	if grep -qs 'mtu: 1360' "$work/r$i/etc/conf.d/50-mesh.yaml"; then fail "rollout (budget): ans-r$i's files were installed"; fi
done
dump ans-r6 >"$work/r6.after2" 2>/dev/null
cmp -s "$work/r6.before2" "$work/r6.after2" || { diff "$work/r6.before2" "$work/r6.after2" | head -20; fail "rollout (budget): ans-r6 was touched"; }
sha256sum -c --quiet "$work/r6.files2" || fail "rollout (budget): ans-r6's files changed"
pass "rollout (budget 1): ans-r2 failed in the second batch and the rollout went on (1 failure within the budget); ans-r4 failed in the third, making 2, and the rollout stopped before ans-r6 (untouched); ans-r2 and ans-r4 rolled back by themselves to their own last confirmed MTU (1380, 1420); ans-r1, ans-r3, ans-r5 confirmed with MTU 1360"

log "no private or preshared key in any output"
keys=("$peer_priv" "$(cat "$work/s/wg.key")" "$(cat "$work/s/peer.psk")" "$(cat "$work/s/nr/nr.key")" "$(sed 's/^not-a-key-//' "$work/s/garbage.key")")
for h in a b c; do keys+=("$(cat "$work/$h/kubespan.key")"); done
# Run the single host once more with -vvv: every result and invocation is printed.
play "${vars[@]}" "$here/single.yml" -vvv --diff -e expect=ok -e s_mtu=1300 -e "out=$work/s.vvv.json" >"$work/s.vvv.log" 2>&1 ||
	{ tail -30 "$work/s.vvv.log"; fail "-vvv run"; }
n=0
for f in "$work"/*.log; do
	for k in "${keys[@]}"; do
		[ -n "$k" ] || die "empty key"
		if grep -qF -- "$k" "$f" || grep -qF -- "${k%=}" "$f"; then fail "a key is printed in $(basename "$f")"; fi
	done
	n=$((n + 1))
done
pass "searched $n logs ($(cat "$work"/*.log | wc -c) bytes, -vvv included) for ${#keys[@]} private and preshared keys: none found"

# ---------------------------------------------------------------------------
log "ansible-test sanity"
"$here/sanity.sh" "$coll" "$work" || fail "ansible-test sanity"

log "done in $(( $(date +%s) - start )) s"
[ "$failures" = 0 ] || die "$failures check(s) failed"
echo "every check held"
