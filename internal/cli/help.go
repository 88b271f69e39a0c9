package cli

const commonFlags = `
Common options:
  -c, --config FILE    main configuration file
                       (default /etc/netreconcile/netreconcile.yaml)
      --conf-dir DIR   drop-in directory read after the main file, *.yaml in
                       name order (default: conf.d next to the main file)
      --netns NAME     work inside the network namespace NAME (as in
                       "ip netns"), or a path such as /proc/PID/ns/net; its
                       state is kept under STATE-DIR/netns/NAME, also when
                       a path names a namespace that has a name (one lock and
                       one ledger per namespace), or netns/nsfs-DEV-INODE for
                       one without; an empty NAME is an error (leave --netns
                       out for your own namespace)
      --state-dir DIR  where ownership records live (default /var/lib/netreconcile);
                       refused unless owned by root or you and writable by
                       nobody else
      --lock-timeout D how long apply and ipam wait for another writer of the
                       same namespace (default 2m; a pass of run waits at
                       most 10s, then retries)
      --allow-insecure-config
                       read a configuration that a user other than root or
                       you could change (refused by default, as sshd does)
      --wireguard-go PATH
                       the userspace WireGuard program for links with
                       userspace: true (absolute; default /usr/bin/wireguard-go)
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
  run        keep the kernel equal to the configuration (the service)
  status     show WireGuard peers: endpoint in use, state, last handshake
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

const runHelp = `Usage: netreconcile run [OPTIONS]

Run as a service: converge once, then keep the kernel equal to the
configuration. This is what netreconcile.service starts.

Every pass does what apply does: read the configuration, read the kernel,
diff, apply. Passes run when something may have changed:
  - the configuration: any change in the main file's directory or in the
    drop-in directory (directories are watched, so editors and tools that
    replace the file by renaming a new one over it are seen);
  - the kernel: netlink notifications about links, addresses, routes and
    rules, in the --netns namespace when one is given;
  - SIGHUP (systemctl reload), which also re-reads files that look unchanged;
  - a periodic full resync (--resync-interval).
Notifications only wake the loop: a burst of them is coalesced into one pass
(50 ms after the first), and a pass starts no sooner after the previous one
ended than 50 ms or that pass's duration, whichever is longer, so a storm
cannot make it flap. A lost notification stream is subscribed again and
followed by a full resync.

An invalid configuration at start is an error (exit 1). An invalid edit
later is logged with its position and shown in the service status; the last
good configuration stays enforced until a valid edit replaces it. A failed
operation is retried with exponential backoff (200 ms doubling to 30 s); a
change of the configuration retries everything at once.

On SIGTERM or SIGINT the service stops and leaves the kernel as it is: it
never tears the network down. Run apply with an empty configuration to
remove what netreconcile created.

systemd integration (Type=notify-reload or Type=notify):
  READY=1      after the first pass that left the kernel equal to the file
  STATUS=      after every pass: objects, drift repaired, errors, last pass
  RELOADING=1  on SIGHUP, followed by READY=1 when the reload pass is done
  WATCHDOG=1   every half WatchdogSec, from the loop itself
  STOPPING=1   on SIGTERM

Logs go to standard error, one line per change applied and per error, with
the fields kind, id and action; nothing is logged while nothing happens.
Secrets are never logged.

Options:
      --resync-interval DURATION
                       period of the full resync (default 5m)
      --metrics-listen ADDR
                       serve Prometheus metrics on http://ADDR/metrics, such
                       as 127.0.0.1:9715 (default: off)
      --log-level LEVEL
                       debug, info (default), warn or error
      --log-format FORMAT
                       text (default) or json
` + commonFlags + `
Exit status: 0 after SIGTERM or SIGINT, 1 when the configuration is invalid
at start or the kernel cannot be opened, 64 on a usage error.

Examples:
  netreconcile run --metrics-listen 127.0.0.1:9715
  systemctl reload netreconcile     # re-read the configuration now
  systemctl status netreconcile     # the STATUS= line
`
