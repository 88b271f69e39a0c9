package cli

const commonFlags = `
Common options:
  -c, --config FILE    main configuration file
                       (default /etc/netreconcile/netreconcile.yaml)
      --conf-dir DIR   drop-in directory read after the main file, *.yaml in
                       name order (default: conf.d next to the main file)
      --netns NAME     work inside the network namespace NAME (as in
                       "ip netns"), or a path such as /proc/PID/ns/net
      --state-dir DIR  where ownership records live (default /var/lib/netreconcile)
  -h, --help           show this help
`

const mainHelp = `netreconcile - make a Linux host's network match one YAML file

Usage:
  netreconcile COMMAND [OPTIONS]

Commands:
  validate   check the configuration; touches nothing, needs no privileges
  diff       show what apply would change (exit 0: nothing, 2: changes pending)
  apply      make the kernel match the configuration, once
  show       print what netreconcile owns in the kernel, as configuration
  ipam       hand out addresses from the IPAM pools (allocate, release, list, gc)
  version    print the version
  help CMD   show the help of one command

netreconcile reads links (veth, bridge, vxlan, dummy, ipvlan, ipip, ip6tnl
with FoU, wireguard), addresses, routes in any table, policy routing rules and
FoU ports from one file plus a drop-in directory, reads the kernel over
netlink, and computes the smallest set of changes. It only ever changes or
deletes what the file names or what it created itself: links carry the alias
marker "netreconcile", routes and rules carry its protocol number (245 unless
settings.protocol says otherwise).

Exit status:
  0  success (for diff: nothing to do)
  1  error: invalid configuration, conflict, or a failed kernel operation
  2  diff only: changes are pending
  64 usage error

Examples:
  netreconcile validate -c /etc/netreconcile/netreconcile.yaml
  netreconcile diff && echo "in sync"
  netreconcile diff --output json | jq '.ops[] | select(.action == "delete")'
  sudo netreconcile apply
  sudo ip netns add lab && sudo netreconcile apply --netns lab -c lab.yaml

See docs/config.md for every configuration key.
`

const validateHelp = `Usage: netreconcile validate [OPTIONS]

Read the main file and its drop-in directory and check every key and value:
types, ranges, references between objects (a route's dev, a link's master),
conflicts between fragments. Every error is reported, each as
FILE:LINE:COL: PATH: what is wrong and what would be accepted.
Nothing is read from or written to the kernel.
` + commonFlags

const diffHelp = `Usage: netreconcile diff [OPTIONS]

Read the configuration and the kernel, and print the plan apply would run,
one object per line:
  + created   ~ changed in place   ± deleted and created again   - deleted
with one indented line per changed attribute. The plan never includes a
private key.

Options:
  -o, --output FORMAT  text (default) or json
` + commonFlags + `
Exit status: 0 when there is nothing to do, 2 when changes are pending,
1 on error (the plan printed before a conflict error leaves the conflicting
objects out).
`

const applyHelp = `Usage: netreconcile apply [OPTIONS]

Validate the configuration, read the kernel, and apply the plan diff would
print. Operations run in dependency order: links, then FoU ports, addresses,
routes and rules; stale objects are removed after their replacements exist.
An operation that fails does not stop independent ones; the command reports
how many failed and why, exits 1, and the next apply continues from where
this one stopped. A second apply of the same file makes no change.

Options:
  -q, --quiet          print nothing on success
` + commonFlags

const showHelp = `Usage: netreconcile show [OPTIONS]

Print the kernel state netreconcile owns (marked links, their addresses,
routes and rules of its protocol, FoU ports it opened) as a configuration
file, with defaults spelled out.

Options:
  -a, --all            print everything readable: foreign links, addresses,
                       routes of every protocol and table, and rules
` + commonFlags
