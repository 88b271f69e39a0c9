#!/bin/sh
# sudo make demo: plan, apply, show and plan again the built-in example (links,
# addresses, routes, rules and an nftables table) in a
# throwaway network namespace, which is deleted at the end.
set -eu
BIN=${1:-bin/netreconcile}
NS=netreconcile-demo-$$
STATE=$(mktemp -d)
if [ "$(id -u)" != 0 ]; then echo "the demo needs root: sudo make demo" >&2; exit 1; fi
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$STATE"' EXIT
ip netns add "$NS"
run() { echo; echo "\$ netreconcile $*"; "$BIN" "$@" --netns "$NS" -c examples/demo.yaml --state-dir "$STATE"; }
echo "== A throwaway network namespace: $NS"
set +e
run diff; [ $? -eq 2 ] || { echo "expected pending changes" >&2; exit 1; }
set -e
run apply
run show
run diff
echo
echo "== The same state, as ip shows it"
ip -n "$NS" -br link
ip -n "$NS" rule
ip -n "$NS" route show table all | grep 'proto 245'
ip netns exec "$NS" nft list table inet demo_mark 2>/dev/null || echo "(install nftables to list the table with nft)"
echo
echo "Done: the second diff found nothing to do. The namespace is removed."
