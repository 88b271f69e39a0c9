#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: netreconcile developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: apply
short_description: Make a host's network match a netreconcile desired state
version_added: 0.1.0
description:
  - Plans and applies a netreconcile desired state (links, addresses, routes, policy rules,
    FoU ports, nftables tables, WireGuard devices and peers, IPAM pools) on the target, through
    the C(netreconcile) binary's JSON output (C(diff -o json), C(apply -o json)).
  - The state is given inline as C(config), a dictionary in netreconcile's schema
    (see docs/config.md), or as a file already on the target, C(path), with its drop-in directory.
  - The task is C(changed) exactly when the plan is not empty, and returns the plan as data
    (C(plan)). A second run of the same state is C(ok) and makes no kernel write.
  - In check mode the module plans against the live kernel with C(netreconcile diff), which
    writes nothing (not even netreconcile's ownership ledger), and reports the same plan and diff
    an apply would run.
  - An invalid state fails the task with netreconcile's own message, each error at
    C(FILE:LINE:COL) with its field path; the host is left as it was. Objects in conflict with the
    kernel (a foreign link where the state declares one) fail the task and are named in
    C(conflicts); the rest of the plan is still applied, as C(netreconcile apply) does.
  - Private and preshared keys are never part of a state (only the paths of their files) nor of
    a result. netreconcile shows a WireGuard device by its public key and a preshared key as
    C((set)) or C((changed)).
author:
  - netreconcile developers (@netreconcile)
requirements:
  - netreconcile on the target (the C(netreconcile.net.netreconcile) role installs it)
  - root, or the capabilities netreconcile needs (CAP_NET_ADMIN)
attributes:
  check_mode:
    support: full
    description: Plans against the live kernel with C(netreconcile diff); writes nothing.
  diff_mode:
    support: full
    description: Before and after of each object the plan touches, and the plan's text.
options:
  config:
    description:
      - The desired state, a dictionary in netreconcile's schema (C(version) 1 at the top).
      - Written on the target to C(inline_dir) (mode 0600, replaced atomically), where it stays
        between runs; in check mode to a private temporary file, removed after. Errors name it
        C(<inline config>).
      - Mutually exclusive with C(path).
    type: dict
  drop_ins:
    description:
      - Drop-in fragments read after C(config), keyed by file name (C(20-mesh.yaml)), each a
        dictionary in the schema with its own C(version) key; written beside the inline file in
        name order, as netreconcile reads C(conf.d). Only with C(config).
      - Paths in them (key files) must be absolute. A relative path is relative to the file
        that names it, in C(inline_dir) (a temporary directory in check mode).
    type: dict
    default: {}
  inline_dir:
    description:
      - The directory on the target that holds C(config) (C(netreconcile.yaml)) and C(drop_ins)
        (C(conf.d/)) between runs, locked during a run. It is kept so that the rollback of a
        confirmed apply (C(confirm_within)), which writes the last confirmed files back where they
        were, writes them to a directory that still exists.
      - Default C(/var/lib/netreconcile-ansible/NETNS) (C(host) without C(netns)), with a hash of
        C(state_dir) appended when one is given.
      - Created mode 0700; one that others can read or write, or owned by another user, fails the
        task. Where the packaged service's group C(netreconcile) exists, it is mode 0750 and its
        files 0640, of that group, since root runs netreconcile as that service's user there (the
        state directory is that user's), which must read them.
    type: path
  path:
    description:
      - The main configuration file on the target, as C(netreconcile -c PATH).
      - Mutually exclusive with C(config).
    type: path
    aliases: [src]
  conf_dir:
    description:
      - The drop-in directory read after C(path) (C(--conf-dir)). Default C(conf.d) next to C(path).
      - Only with C(path).
    type: path
  netns:
    description:
      - Work inside this network namespace (as in C(ip netns)), passed as C(--netns NAME), so
        netreconcile keeps the namespace's lock and ownership ledger under
        C(STATE-DIR/netns/NAME) and starts C(wireguard-go) inside it.
      - Left out, the target's own namespace.
    type: str
  binary:
    description:
      - Path of the netreconcile binary on the target. Default C(netreconcile) from C($PATH),
        C(/usr/sbin), C(/usr/local/sbin).
    type: path
  state_dir:
    description: netreconcile's C(--state-dir). Default the binary's (C(/var/lib/netreconcile)).
    type: path
  lock_timeout:
    description: netreconcile's C(--lock-timeout), how long to wait for another writer (C(2m)).
    type: str
  wireguard_go:
    description: netreconcile's C(--wireguard-go), the absolute path of the userspace WireGuard program.
    type: path
  confirm_within:
    description:
      - Apply as a transaction that netreconcile rolls back unless it is confirmed within this
        duration (C(apply --confirm-within), for example C(2m)). Confirm it with
        M(netreconcile.net.confirm), from a fresh connection, so that the confirmation proves the
        path to the host still works.
      - Needs a netreconcile whose C(apply) has C(--confirm-within); the task fails otherwise.
      - Ignored in check mode.
    type: str
  probes:
    description:
      - Probes netreconcile runs after a confirmable apply (C(--probe), once per item); see
        C(netreconcile help apply) for their form. Only with C(confirm_within).
    type: list
    elements: str
    default: []
  plan:
    description:
      - A saved plan on the target (docs/plans.md). In check mode the module saves the plan it
        shows there (C(netreconcile diff --out PLAN)); otherwise it applies exactly that plan
        (C(netreconcile apply --plan PLAN)), or fails with C(stale) true and the differences in
        C(stale_reasons), changing nothing, when a configuration file or secret changed, the
        kernel changed, or the plan was made elsewhere. So C(ansible-playbook --check --diff)
        shows the plan, and the run that follows applies the plan that was shown or nothing.
      - The plan file is compared, never obeyed; what runs is a plan made from the files and
        the kernel as they are, once it is the saved one.
    type: path
  max_disruption:
    description:
      - Refuse, changing nothing, a plan with an operation that disrupts more than this
        (C(apply --max-disruption)); the task fails with the operations in C(refused).
        C(in-place) < C(table-replaced) < C(link-flapped) < C(link-recreated).
      - In check mode the plan is only shown, with each operation's C(disruption).
    type: str
    choices: [in-place, table-replaced, readded, link-flapped, link-recreated]
  strict:
    description:
      - Fail, changing nothing, when the plan has warnings (C(--strict)). Without it warnings
        are shown as Ansible warnings and returned in C(plan_warnings).
    type: bool
    default: false
notes:
  - The result never holds a private or preshared key. Keep key material in files on the target
    (M(netreconcile.net.wireguard_key) makes one) and name their paths in the state.
  - C(config) is rendered as JSON (which is YAML), so positions in errors are lines of that
    rendering; the field path in each error names the variable.
seealso:
  - module: netreconcile.net.confirm
  - module: netreconcile.net.wireguard_key
  - name: netreconcile configuration reference
    description: Every key of the schema, its type and default.
    link: https://github.com/netreconcile/netreconcile/blob/main/docs/config.md
'''

EXAMPLES = r'''
- name: A bridge with an address, inline
  netreconcile.net.apply:
    config:
      version: 1
      links:
        br0:
          kind: bridge
          mtu: 1450
          addresses: [10.10.0.1/24]
      routes:
        - {to: 198.51.100.0/24, via: 10.10.0.254}

- name: The files the role rendered
  netreconcile.net.apply:
    path: /etc/netreconcile/netreconcile.yaml

- name: Plan only, showing the diff (ansible-playbook --check --diff does the same)
  netreconcile.net.apply:
    path: /etc/netreconcile/netreconcile.yaml
  check_mode: true
  diff: true
  register: plan

- name: In a network namespace, with a private state directory
  netreconcile.net.apply:
    netns: lab
    state_dir: /var/lib/netreconcile-lab
    config: "{{ lab_network }}"

- name: Plan and save the plan on the target (run the play with --check --diff to review it)
  netreconcile.net.apply:
    path: /etc/netreconcile/netreconcile.yaml
    plan: /var/lib/netreconcile-ansible/reviewed.plan
    max_disruption: link-flapped

- name: Apply, to be rolled back in 2 minutes unless confirmed
  netreconcile.net.apply:
    path: /etc/netreconcile/netreconcile.yaml
    confirm_within: 2m
  register: applied

- name: Reconnect, so that the confirmation travels the new path
  ansible.builtin.meta: reset_connection

- name: Confirm
  netreconcile.net.confirm:
    transaction: "{{ applied.transaction_id }}"
  when: applied.transaction_id is not none
'''

RETURN = r'''
plan:
  description:
    - The operations planned (check mode) or done, in order, as C(netreconcile diff -o json) lists
      them. Empty when the kernel already matched.
  returned: always
  type: list
  elements: dict
  contains:
    action:
      description: C(create), C(update) (in place), C(replace) (deleted and created), C(delete).
      type: str
      sample: create
    kind:
      description:
        - C(link), C(address), C(route), C(rule), C(fou), C(wireguard), C(wireguard_peer), C(nft_table), C(nft_set),
          C(nft_chain), C(nft_rule), C(nft_element), C(sysctl) (netreconcile's JSON names them in snake_case;
          C(plan_text) and the diff in words, as C(netreconcile diff) prints them).
      type: str
      sample: route
    id:
      description: The object's identity, as the kernel knows it.
      type: str
      sample: default table 180 metric 1
    summary:
      description: Its attributes; null for none.
      type: str
      sample: dev kubespan scope link
    disruption:
      description: >-
        What it does to traffic and state: C(in_place), C(table_replaced) (an nftables table
        rebuilt), C(readded) (an address or FoU port deleted and added again), C(link_flapped) (down and up), C(link_recreated) (a new ifindex).
      type: str
      sample: in_place
    changes:
      description: For an update or replace, each field with C(field), C(from) and C(to) (null for no value).
      type: list
      elements: dict
    reason:
      description: Why (a replace, a delete); null for none.
      type: str
  sample:
    - {action: create, kind: link, id: br0, summary: bridge mtu 1450, changes: [], reason: null}
pending:
  description: Pool addresses a check-mode plan cannot name yet (apply allocates them).
  returned: when there are some
  type: list
  elements: dict
plan_text:
  description: The plan as C(netreconcile diff) prints it, one line per object.
  returned: always
  type: str
  sample: "+ link br0 (bridge mtu 1450)\n"
protocol:
  description: The route and rule protocol netreconcile owns objects by.
  returned: when a plan was made
  type: int
  sample: 245
errors:
  description: The configuration's errors, each with C(file), C(line), C(column), C(path), C(message) and C(text).
  returned: when the configuration is invalid
  type: list
  elements: dict
  sample:
    - file: "<inline config>"
      line: 6
      column: 14
      path: links.br0.mtu
      message: expected an MTU from 68 to 65535 for a bridge link, found 20
      text: "<inline config>:6:14: links.br0.mtu: expected an MTU from 68 to 65535 for a bridge link, found 20"
conflicts:
  description: Objects left out because the kernel holds them in a way netreconcile may not change.
  returned: on a conflict
  type: list
  elements: str
held_back:
  description: How many objects conflicts held back (the length of C(conflicts)).
  returned: on a conflict
  type: int
failed_ops:
  description: Operations the kernel refused, each with C(op_error).
  returned: when some failed
  type: list
  elements: dict
plan_warnings:
  description: What the plan makes the kernel do silently, each with C(keys), C(message) and C(fix).
  returned: always
  type: list
  elements: dict
plan_file:
  description: Where check mode saved the plan (C(plan)).
  returned: in check mode with C(plan)
  type: str
stale:
  description: C(plan) was refused because it no longer holds; nothing was changed.
  returned: with C(plan), outside check mode
  type: bool
stale_reasons:
  description: What differs between the saved plan and the plan made now.
  returned: when C(stale)
  type: list
  elements: str
refused:
  description: The operations above C(max_disruption); nothing was changed.
  returned: when C(max_disruption) refused the plan
  type: list
  elements: dict
transaction_id:
  description:
    - The id of the transaction a C(confirm_within) apply opened (C(transaction.id) in
      C(apply -o json)), to give to M(netreconcile.net.confirm). None otherwise.
  returned: always
  type: str
  sample: null
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.netreconcile.net.plugins.module_utils import netreconcile as nr


def main():
    spec = nr.common_argument_spec()
    spec.update(
        config=dict(type='dict'),
        drop_ins=dict(type='dict', default={}),
        path=dict(type='path', aliases=['src']),
        conf_dir=dict(type='path'),
        inline_dir=dict(type='path'),
        confirm_within=dict(type='str'),
        probes=dict(type='list', elements='str', default=[]),
        plan=dict(type='path'),
        max_disruption=dict(type='str', choices=['in-place', 'table-replaced', 'readded', 'link-flapped', 'link-recreated']),
        strict=dict(type='bool', default=False),
    )
    module = AnsibleModule(
        argument_spec=spec,
        mutually_exclusive=[('config', 'path'), ('config', 'conf_dir')],
        required_one_of=[('config', 'path')],
        supports_check_mode=True,
    )
    p = module.params
    if p['drop_ins'] and p['config'] is None:
        module.fail_json(msg='drop_ins go with config; with path, netreconcile reads conf_dir')
    if p['probes'] and not p['confirm_within']:
        module.fail_json(msg='probes need confirm_within: netreconcile runs them only for a confirmable apply')
    if p['plan'] and not nr.supports(module, nr.find_binary(module), 'apply', nr.PLAN_FLAG):
        module.fail_json(msg='plan: this netreconcile has no apply %s' % nr.PLAN_FLAG)
    binary = nr.find_binary(module)
    inline_dir = None
    if p['config'] is not None and not module.check_mode:
        inline_dir = p['inline_dir'] or nr.inline_dir_for(p['netns'], p['state_dir'])
    source = nr.Source(module, config=p['config'], path=p['path'], conf_dir=p['conf_dir'], drop_ins=p['drop_ins'], inline_dir=inline_dir)
    try:
        run(module, binary, source)
    finally:
        source.cleanup()


def run(module, binary, source):
    p = module.params
    args = source.args() + nr.common_args(module)
    header = nr.INLINE_LABEL if p['config'] is not None else p['path']
    if p['netns']:
        header += ' (netns %s)' % p['netns']
    result = dict(changed=False, plan=[], plan_text='', transaction_id=None)

    if p['strict']:
        args = args + [nr.STRICT_FLAG]
    if module.check_mode:
        argv = ['diff'] + args
        if p['plan']:
            argv.append(nr.PLAN_OUT_FLAG + '=' + p['plan'])
        rc, data, err = nr.run_json(module, binary, argv, source)
        if p['plan'] and data.get('plan_file'):
            result['plan_file'] = data['plan_file']
        ops = data.get('ops')
        if ops is None:  # no plan at all: an invalid configuration
            ops = []
        pending = data.get('pending') or []
        if rc not in (0, nr.EXIT_CHANGES) and not data.get('error'):
            module.fail_json(msg='netreconcile diff failed (exit %d): %s' % (rc, err.strip()), rc=rc, **result)
    else:
        argv = ['apply'] + args
        if p['plan']:
            argv.append(nr.PLAN_FLAG + '=' + p['plan'])
            result['stale'] = False
        if p['max_disruption']:
            argv.append(nr.MAX_DISRUPTION_FLAG + '=' + p['max_disruption'])
        if p['confirm_within']:
            if not nr.supports(module, binary, 'apply', nr.CONFIRM_WITHIN_FLAG):
                module.fail_json(msg='confirm_within: this netreconcile (%s) has no apply %s' % (binary, nr.CONFIRM_WITHIN_FLAG))
            argv.append(nr.CONFIRM_WITHIN_FLAG + '=' + p['confirm_within'])
            for probe in p['probes']:
                argv.append(nr.PROBE_FLAG + '=' + probe)
        rc, data, err = nr.run_json(module, binary, argv, source)
        ops = data.get('ops') or []
        pending = []
        result['transaction_id'] = nr.transaction_id(data)

    result.update(plan=ops, plan_text=nr.plan_text(ops + pending), changed=bool(ops or pending))
    result['plan_warnings'] = data.get('warnings' if module.check_mode else 'plan_warnings') or []
    for w in result['plan_warnings']:
        module.warn(nr.warning_text(w))
    if rc == nr.EXIT_STALE:
        result.update(stale=True, stale_reasons=data.get('stale') or [])
        module.fail_json(msg=source.relabel(data.get('error') or 'the saved plan is stale'), rc=rc, **result)
    if rc == nr.EXIT_DISRUPTION:
        result['refused'] = data.get('refused') or []
        module.fail_json(msg=source.relabel(data.get('error') or 'the plan disrupts more than max_disruption'), rc=rc, **result)
    if pending:
        result['pending'] = pending
    if data.get('protocol'):
        result['protocol'] = data['protocol']
    if module._diff:
        result['diff'] = nr.ansible_diff(ops + pending, header)
    if data.get('conflicts'):
        result['held_back'] = data.get('held_back', len(data['conflicts']))
    if data.get('error'):
        why = nr.failure(data, source)
        if 'failed' in why:
            why['failed_ops'] = why.pop('failed')
        result.update(why)
        module.fail_json(msg=source.relabel(data['error']), rc=rc, **result)
    if rc not in (0, nr.EXIT_CHANGES):
        module.fail_json(msg='netreconcile exited %d: %s' % (rc, err.strip()), rc=rc, **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
