package cli

// Every text the command line prints as help is here: the binary's help,
// and (generated from these) the manual pages and shell completions.

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
                       nobody else; one of the packaged service's user
                       netreconcile makes root run the command as that user,
                       with the service's capabilities (the main file is
                       still written by root: apply --candidate, rollback)
      --lock-timeout D how long apply and ipam wait for another writer of the
                       same namespace (default 2m; a pass of run waits at
                       most 10s, then retries)
      --allow-insecure-config
                       read a configuration that a user other than root or
                       you could change (refused by default, as sshd does)
      --wireguard-go PATH
                       the userspace WireGuard program for links with
                       userspace: true (absolute; default /usr/bin/wireguard-go)
      --nft PATH       the nft program that compiles nftables rules
                       (absolute; default /usr/sbin/nft)
  -h, --help           show this help
`

const mainHelp = `netreconcile - make a Linux host's network match one YAML file

Usage:
  netreconcile COMMAND [OPTIONS]

Commands:
  validate   check the configuration; touches nothing, needs no privileges
  diff       show what apply would change (exit 0: nothing, 2: changes pending)
  apply      make the kernel match the configuration, once (--confirm-within:
             roll back by itself unless confirmed)
  confirm    confirm the pending safe-apply transaction
  rollback   roll the pending safe-apply transaction back now
  show       print what netreconcile owns in the kernel, as configuration
  run        keep the kernel equal to the configuration (the service)
  status     show a pending safe-apply transaction and WireGuard peers
  ipam       hand out addresses from the IPAM pools (allocate, release, list, gc)
  wireguard  make a WireGuard private key (genkey), derive its public key (pubkey)
  completion print the shell completion script (bash, zsh or fish)
  version    print the version and the commit
  help CMD   show the help of one command (help ipam allocate: of a subcommand)

netreconcile reads links (veth, bridge, vxlan, dummy, ipvlan, macvlan, vlan,
vrf, bond, ipip, ip6tnl with FoU, wireguard with its peers), addresses,
routes in any table, policy routing rules, FoU ports, nftables tables,
sysctls and IPAM pools from one file plus a drop-in directory, reads the
kernel over netlink, and computes the smallest set of changes. It only ever
changes or deletes what the file names or what it created itself: links
carry the alias marker "netreconcile", routes and rules carry its protocol
number (245 unless settings.protocol says otherwise).

Every command but help takes -o json (--output json): one JSON document on
standard output, on success and on failure, with a schema_version; the
fields are named in snake_case and stable from 1.0 on (docs/json.md, and a
JSON Schema per command in docs/schema). For run, -o is --log-format;
wireguard and completion print a key or a script, as they are.

Exit status, the same for every command:
  0   success (diff: nothing to do)
  1   error: an invalid configuration, a conflict with the kernel's state, a
      failed kernel operation, a refused state directory, a transaction
      rolled back or none to confirm
  2   diff only: changes are pending
  3   apply --plan only: the saved plan is stale (the files or the kernel
      changed since diff --out made it); nothing was changed
  4   apply --max-disruption only: the plan disrupts more; nothing was
      changed
  64  usage error: an unknown command, option or argument (one line on
      standard error, and no JSON)

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

Options:
  -o, --output FORMAT  text (default) or json: {"valid", "config", "files",
                       "counts"}, and on failure "error" and "errors", each
                       with "file", "line", "column", "path", "message"
                       (docs/schema/validate.json)
` + commonFlags

const diffHelp = `Usage: netreconcile diff [OPTIONS]

Read the configuration and the kernel, and print the plan apply would run,
one object per line:
  + created   ~ changed in place   ± deleted and created again   - deleted
with one indented line per changed attribute, then a count: "Plan: 1 to
create, ...". Objects that a conflict with the kernel's state holds back
(a foreign link in the way) are counted apart ("N objects held back by
conflicts") and named on standard error. The plan never includes a private
key; a WireGuard peer is named by its public key.

Each op ends with what it disrupts when it is more than its own change:
[table replaced] (an nftables table rebuilt in one batch: counters, quotas
and elements rules added are reset), [link flapped] (the link goes down and
up: a passthru macvlan's master, a bond's mode, joining or leaving a bond or
a vrf), [link recreated] (deleted and made again: a new ifindex; sockets,
WireGuard sessions, neighbours and routes through it are lost). Every other
op is in place; the line after the plan counts them all.

Then the warnings: what the plan makes the kernel do silently (IPv6
forwarding turning router advertisements off where accept_ra is 1, an MTU
above a lower device's, a route through a gateway no declared address
reaches), each with the keys concerned and the fix.

Options:
      --out FILE       also save the plan to FILE (mode 0600), with a digest
                       of every configuration file and secret it was made
                       from (never their content) and of the kernel state
                       each op depends on: "netreconcile apply --plan FILE"
                       then applies exactly it, or refuses it if anything
                       changed (docs/plans.md)
      --strict         warnings are errors (exit 1; no plan is saved)
  -o, --output FORMAT  text (default) or json: {"ops": [...], each with its
                       "disruption" (in_place, table_replaced, readded,
                       link_flapped, link_recreated), "pending", "protocol", "conflicts",
                       "held_back", "warnings" (each with "keys", "message",
                       "fix"), "plan_file"}, and on failure "error" and
                       "errors" (an invalid file, as validate prints them;
                       then "ops" is null) (docs/schema/diff.json)
` + commonFlags + `
Exit status: 0 when there is nothing to do, 2 when changes are pending,
1 on error, conflicts included (the plan printed leaves the objects held
back out), or with --strict when the plan warns.
`

const applyHelp = `Usage: netreconcile apply [OPTIONS]

Validate the configuration, read the kernel, and apply the plan diff would
print. Operations run in dependency order: links, then FoU ports, addresses,
routes and rules; stale objects are removed after their replacements exist.
An operation that fails does not stop independent ones; the command reports
how many failed and why, exits 1, and the next apply continues from where
this one stopped. A second apply of the same file makes no change.

Every apply verifies: it reads the kernel again and requires an empty plan,
retrying for about 1.5 s for what the kernel finishes on its own. A kernel
that still differs fails the apply (exit 1). An apply that converged records
the files as the namespace's last confirmed configuration, the restore point
of the next apply --confirm-within.

While a safe-apply transaction is pending (below), a plain apply is refused:
confirm the transaction, roll it back, or apply with --confirm-within.

Safe apply (commit-confirmed):
  --confirm-within DURATION
                       apply inside a transaction that rolls back by itself
                       unless "netreconcile confirm" runs within DURATION
                       (e.g. 2m; 0 is refused, not taken for a plain
                       apply). Before the first kernel write, the
                       transaction is recorded in the state directory: its
                       id, deadline and boot id, the last confirmed
                       configuration's files (the restore point) and the
                       kernel state netreconcile owned. A rollback writes
                       those files back and plans the kernel to them; it
                       touches nothing netreconcile does not own. The
                       deadline is held by the daemon when one runs for the
                       namespace, else by a transient systemd timer, else by
                       a detached process; a transaction found after a
                       reboot is rolled back first. Given again while one is
                       pending, it applies the files as they are now, moves
                       the deadline and keeps the first restore point.
      --candidate FILE install FILE as the main configuration file once the
                       transaction is recorded (atomically, keeping the
                       file's mode and owner), then apply it. With the
                       daemon running this is how a change gets covered: the
                       daemon applies a file edited in place at once, before
                       any transaction exists. Without --candidate, the
                       files on disk are applied and the restore point is the
                       last confirmed configuration.
      --probe PROBE    (repeatable) a check run before and after the apply:
                         tcp:HOST:PORT  a TCP connection succeeds
                         gateway        the default route's next hop answers
                                        ARP (IPv4) or neighbour discovery
                                        (IPv6), for each family with one
                         ssh            the client of $SSH_CONNECTION is
                                        routed as before (ip route get)
                         wireguard:LINK the peers of LINK with a fresh
                                        handshake (under 180 s) keep it
                       Only probes passing before the apply are armed (the
                       others are reported as skipped). An armed probe that
                       fails after the apply rolls back at once, then runs
                       again; the output says what it found.
      --rollback-timer MODE
                       what holds the deadline once apply returns: auto
                       (default: the daemon, else systemd, else a process),
                       daemon, systemd or process
  A failed operation or a failed verify inside a transaction rolls it back at
  once. Exit status 1 when the change was rolled back.

Plans (docs/plans.md):
      --plan FILE      apply exactly the plan "diff --out FILE" saved, or
                       refuse it (exit 3, nothing changed, the differences
                       listed) when a configuration file or secret changed,
                       when the plan was made for another host, namespace
                       or state directory, or when the plan made now from
                       the files and the kernel differs from the saved one
                       in any op or in the kernel object an op depends on.
                       The file grants nothing: what runs is the plan made
                       now, once it is the saved one. Works with
                       --confirm-within and --probe, not with --candidate
      --max-disruption LEVEL
                       refuse a plan with an op that disrupts more than
                       LEVEL (exit 4, nothing changed, the ops named):
                       in-place < table-replaced < readded <
                       link-flapped < link-recreated
      --strict         refuse a plan with warnings (exit 1, nothing changed)

Options:
  -q, --quiet          print nothing on success
  -o, --output FORMAT  text (default) or json: {"ops": the operations done,
                       "failed": those the kernel refused, each with
                       "op_error"; "changed", "verified", "transaction",
                       "probes", "rollback", "warnings" (docs/safe-apply.md),
                       "plan_warnings" (as diff's "warnings"), "stale" (why
                       --plan was refused), "refused" (the ops above
                       --max-disruption); "conflicts" and "held_back" as diff
                       prints them; on failure "error" and "errors"}
                       (docs/schema/apply.json)
` + commonFlags + `
Exit status: 0 when the kernel matches the configuration, 1 otherwise (an
operation failed, a conflict held objects back, the verify failed, or the
transaction was rolled back at once), 3 --plan refused as stale, 4
--max-disruption refused the plan.
`

const confirmHelp = `Usage: netreconcile confirm [OPTIONS] [ID]

Confirm the pending safe-apply transaction (netreconcile apply
--confirm-within), from any session: its configuration becomes the
namespace's confirmed one, the restore point of the next transaction, and
its timer is stopped. ID, when given, must be the pending transaction's.

A transaction whose deadline passed, or that began before a reboot, cannot
be confirmed: it is rolled back now, and confirm exits 1.

Confirm from a new connection (a new SSH session, a later Ansible task): a
change that cut the host off cannot be confirmed, and rolls back.

Options:
  -o, --output FORMAT  text (default) or json: {"transaction": {...},
                       "rollback": null}, and "error" when nothing could
                       be confirmed (docs/schema/confirm.json)
` + commonFlags

const rollbackHelp = `Usage: netreconcile rollback [OPTIONS] [ID]

Roll the pending safe-apply transaction back now: write the restore point's
configuration files back (each atomically; what they replaced is kept
beside them as .NAME.rejected-ID, and a drop-in added since is moved there
too), then make the kernel match them by a plan from the kernel as it is,
leaving everything netreconcile does not own alone, and verify. ID, when
given, must be the pending transaction's.

Options:
      --due            wait for transaction ID's deadline (as recorded; an
                       extension moves it) and roll it back then, unless it
                       ended before: what a timer runs
  -o, --output FORMAT  text (default) or json: {"transaction": {...},
                       "rollback": {"cause", "detail", "files", "operations",
                       "error"}} (docs/schema/rollback.json)
` + commonFlags

const showHelp = `Usage: netreconcile show [OPTIONS]

Print the kernel state netreconcile owns (marked links, their addresses,
routes and rules of its protocol, FoU ports it opened, nftables tables,
WireGuard devices and peers, sysctls it set) as a configuration file, with
defaults spelled out, and the configuration's IPAM pools with what they
hold as comments.

Options:
  -a, --all            print everything readable too: what is netreconcile's
                       as without --all, and the sysctls the configuration
                       declares (when given), then as comments under their
                       section the foreign links with their addresses, routes
                       of every protocol and table, rules and FoU ports, each
                       saying why it is not a declaration (its protocol, the
                       kernel's, or "add adopt: true to take it over"): the
                       output still applies with zero writes; uncomment what
                       the file should take over
  -o, --output FORMAT  text (default) or json: {"configuration": the same
                       configuration as JSON (which validate and apply
                       read), "foreign": with --all, what the text prints as
                       comments, in the configuration's structure (null
                       without), "pools": each pool's usage and blocks}
                       (docs/schema/show.json)
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
  - a periodic resync (--resync-interval), which reads every kind of state
    again, of the routes the tables notifications do not vouch for, and
    every table at the full resync (--full-resync-interval).
Notifications only wake the loop: a burst of them is coalesced into one pass
(50 ms after the first; 5 ms after a kernel notification of drift, which
comes with the rest of its burst). Passes spend a budget of pass time, each
50 ms or its duration, whichever is longer, earned back by the time between
passes up to half a second: under a storm the loop spends at most half its
time in passes and cannot flap, while an isolated repair runs at once. A lost notification stream is subscribed again and
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
A pass that changes more than --log-changes objects logs the first ones a line
each and the rest as one line per kind and action with their count (each
change is still logged, at debug level). Secrets are never logged.

Options:
      --resync-interval DURATION
                       period of the resync (default 5m)
      --full-resync-interval DURATION
                       how often a resync reads every route table, also
                       those the notifications vouch for (default 1h)
      --metrics-listen ADDR
                       serve Prometheus metrics on http://ADDR/metrics, such
                       as 127.0.0.1:9715 (default: off)
      --metrics-web-config FILE
                       TLS and basic auth for the metrics: the Prometheus
                       exporter toolkit's web configuration file, as
                       node_exporter's --web.config.file (default: none)
      --log-level LEVEL
                       debug, info (default), warn or error
      --log-format FORMAT, -o FORMAT
                       text (default) or json (one object a line; strings
                       with control characters escaped, as in text)
      --log-changes N  changes (and failures) a pass logs a line each before
                       it logs counts (default 100; 0: counts only; -1: no
                       limit)
      --max-disruption LEVEL
                       the most disruptive change a pass applies by itself:
                       in-place, table-replaced, readded, link-flapped
                       or link-recreated (default: settings.max-disruption of
                       the configuration, else no limit). A change above it
                       is held, with what needs it, until an apply by hand:
                       the status line, the metric
                       netreconcile_held_changes and a log line (once per
                       change of what is held) name it
      --memory-limit LIMIT
                       soft limit of the Go runtime's memory: auto (default:
                       3.5 times the heap the configuration holds once loaded,
                       at least 64M), off (the runtime's own, or GOMEMLIMIT
                       when set, which auto also leaves alone), or a size
                       such as 200M (K, M, G: powers of 1024). Near the limit
                       the runtime collects sooner, which costs CPU in large
                       passes only; a pass that needs more still runs
` + commonFlags + `
Exit status: 0 after SIGTERM or SIGINT, 1 when the configuration is invalid
at start or the kernel cannot be opened, 64 on a usage error.

Examples:
  netreconcile run --metrics-listen 127.0.0.1:9715
  systemctl reload netreconcile     # re-read the configuration now
  systemctl status netreconcile     # the STATUS= line
`

const ipamHelp = `Usage: netreconcile ipam [OPTIONS] COMMAND [OPTIONS]

Hand out addresses from the IPAM pools of the configuration (the pools:
section), and see what is handed out. The registry is a file per pool under
STATE-DIR/ipam (STATE-DIR/netns/NAME/ipam with --netns NAME, or
netns/nsfs-DEV-INODE/ipam for a path such as /proc/PID/ns/net), shared with
apply and the daemon: any number of these commands, CNI plugins and apply may
run at once. allocate, release and gc hold the namespace's writer lock, as
apply does (see --lock-timeout); list takes none and writes nothing.

Commands:
  allocate  --owner ID [--pool P] [--iface NAME] [-o text|json]
            give an owner an address (the same one if it already has one)
            and print it; a dual-stack pool prints an IPv4 and an IPv6 line
  release   --owner ID [--pool P] [--iface NAME] [-o text|json]
            take an owner's address back; it is handed out again only after
            the pool's reuse-delay, and a block left empty is given back
  list      [--pool P] [-o text|json]
            the addresses handed out, and the blocks this host holds
  gc        [--free-after D] [-o text|json]
            free the addresses of owners that are gone (pid:N, netns:PATH)
            and were handed out at least D ago (default 15m)

--pool may be left out when the configuration has one pool. --output table,
the former name of list's and gc's text output, is still accepted. With -o
json each command prints one document (docs/schema/ipam-COMMAND.json):
{"allocation"}, {"released"}, {"pools"}, {"freed"}, and "error" on failure.

Owner IDs are printable text without spaces. These forms let gc tell when
their owner is gone:
  pid:1234               a process
  netns:/run/netns/blue  a network namespace (gone when the path is)
  config:link/NAME       the address a link takes from a pool, which apply
                         hands out and gives back itself

A block taken by allocate is exported as a route (dev lo, table export-table)
by the next apply, or the daemon's next pass; a block given back by release
is withdrawn the same way. When a pool's registry file is missing while the
kernel still shows what it handed out, allocate, release and gc refuse, as
apply does (see "A lost registry" in docs/config.md).

The common options may come before COMMAND or after it.
Run 'netreconcile help ipam COMMAND' for the options of one command.
` + commonFlags + `
Exit status: 0 on success, 1 on error (an exhausted or unknown pool, a
refused registry, an unreadable configuration), 64 on a wrong command line.

Examples:
  netreconcile ipam allocate --pool kubespan --owner pid:$$
  netreconcile ipam release --pool kubespan --owner pid:$$
  netreconcile ipam list --output json | jq '.pools[].usage.allocated'
  netreconcile ipam gc --free-after 1h
`

const ipamOwnerOptions = `
Options:
      --owner ID       the owner (required): printable text without spaces;
                       pid:N and netns:PATH let gc tell when it is gone
      --pool P         the pool (may be left out when the configuration has
                       only one)
      --iface NAME     the interface, for an owner that has several
  -o, --output FORMAT  text (default) or json
`

const ipamAllocateHelp = `Usage: netreconcile ipam allocate --owner ID [--pool P] [--iface NAME] [OPTIONS]

Give an owner an address from a pool and print it; a dual-stack pool gives an
IPv4 and an IPv6 address, one per line (json: the allocation). The same owner
and interface asking again get the same address. A new address is the next
after the last one handed out; a released one is handed out again only after
the pool's reuse-delay. Holds the namespace's writer lock.
` + ipamOwnerOptions + commonFlags

const ipamReleaseHelp = `Usage: netreconcile ipam release --owner ID [--pool P] [--iface NAME] [OPTIONS]

Take back the address an owner holds on an interface (or without one) in a
pool. It is handed out again only after the pool's reuse-delay; a block left
empty is given back at once, and withdrawn by the next apply. Releasing an
address that is not held does nothing and is not an error (json: an empty
"released" list). Holds the namespace's writer lock.
` + ipamOwnerOptions + commonFlags

const ipamListHelp = `Usage: netreconcile ipam list [--pool P] [OPTIONS]

Show the addresses handed out, oldest first, and for each pool the blocks held
and how many addresses wait out the reuse-delay. Takes no lock and writes
nothing.

Options:
      --pool P         show only the pool P
  -o, --output FORMAT  text (default; table is accepted) or json
` + commonFlags

const ipamGCHelp = `Usage: netreconcile ipam gc [--free-after D] [OPTIONS]

Free the addresses whose owner is gone and that were handed out at least D
ago, and show what was freed. Only owners of the forms pid:N and netns:PATH
can be checked here; the daemon frees the addresses of configuration objects
(config:...) itself. How many old addresses were kept because their owner
cannot be checked is told on standard error. Holds the namespace's writer
lock.

Options:
      --free-after D   free only addresses handed out at least D ago, such as
                       30m (default 15m)
  -o, --output FORMAT  text (default; table is accepted) or json
` + commonFlags

const versionHelp = `Usage: netreconcile version [OPTIONS]

Print the version and the commit netreconcile was built from, and the Go
toolchain that built it: "netreconcile VERSION (commit COMMIT, goX.Y.Z)".
make build and make deb stamp them; a binary built otherwise says "dev"
and "unknown".

Options:
  -o, --output FORMAT  text (default) or json: {"schema_version",
                       "version", "commit", "go_version"} (docs/json.md)
  -h, --help           show this help
`

const statusHelp = `Usage: netreconcile status [OPTIONS]

Show the namespace's safe-apply transaction, if one is pending (its id, the
time left before it rolls back and the command that confirms it), and how
the last one ended; then each WireGuard peer of the devices the file names
(or, without a readable file, of every device netreconcile owns): the
endpoint in use, the state (up, unknown, down; see docs/config.md, wireguard
rotation), the age of the last handshake, bytes received and sent, and the
candidate endpoint a rotation would try next. Only public keys are printed.

A one-shot command does not know when the daemon last changed an endpoint:
it judges each peer by its last handshake alone.

Options:
  -o, --output FORMAT  text (default) or json: {"transaction": {...} or
                       null, "last_transaction": {...} or null, "counts":
                       {"confirmed": N, "rolled_back": {"CAUSE": N}},
                       "peers": [...]} (docs/schema/status.json)
` + commonFlags

const wireguardHelp = `Usage: netreconcile wireguard genkey
       netreconcile wireguard pubkey <PRIVATE-KEY-FILE

Make and derive WireGuard keys as wg(8) does, without wireguard-tools:
  genkey   print a new private key (32 random bytes, clamped for X25519, in
           base64) on standard output
  pubkey   read a private key from standard input and print its public key

A private key goes to standard output only. Keep it in a file only its
owner can read (umask 077), and name that file in private-key-file: genkey
warns, as wg genkey does, when standard output is a file others can read.
pubkey refuses an input that is not a key without printing any of it.

Exit status: 0 on success, 1 when standard input holds no private key, 64 on
a usage error.

Examples:
  (umask 077; netreconcile wireguard genkey >/etc/netreconcile/wg0.key)
  netreconcile wireguard pubkey </etc/netreconcile/wg0.key
`

const completionHelp = `Usage: netreconcile completion bash|zsh|fish

Print the completion script of a shell on standard output. It completes the
commands, the ipam and wireguard subcommands and each command's options, as
this help lists them, with files, directories, network namespaces
(/run/netns) and output formats as their values. The Debian package
installs the three scripts; elsewhere, install the one of your shell:
  bash  netreconcile completion bash \
          >~/.local/share/bash-completion/completions/netreconcile
  zsh   netreconcile completion zsh >"${fpath[1]}/_netreconcile"
  fish  netreconcile completion fish \
          >~/.config/fish/completions/netreconcile.fish

Exit status: 0 on success, 64 on a usage error.
`
