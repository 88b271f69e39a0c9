#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: netreconcile developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: confirm
short_description: Confirm or roll back a netreconcile transaction
version_added: 0.1.0
description:
  - Confirms a transaction that M(netreconcile.net.apply) opened with its C(confirm_within) option
    (C(netreconcile confirm [ID])), or rolls it back (C(netreconcile rollback [ID])).
  - Run it from a fresh connection (C(meta) C(reset_connection) before it). A confirmation that
    reaches the host proves the new network still carries the path from the controller. A
    transaction nobody confirms is rolled back by netreconcile when its time is up.
  - Needs a netreconcile that has the C(confirm) and C(rollback) commands; the task fails with
    a clear message otherwise.
author:
  - netreconcile developers (@netreconcile)
attributes:
  check_mode:
    support: none
    description: A confirmation cannot be planned.
  diff_mode:
    support: none
    description: Nothing to show.
options:
  transaction:
    description:
      - The transaction id (the C(transaction_id) that M(netreconcile.net.apply) returns). Left out, the pending one.
      - Letters, digits and dashes, not starting with a dash, at most 64 characters; anything else fails the task.
    type: str
  state:
    description: C(confirmed) runs C(netreconcile confirm), C(rolled_back) runs C(netreconcile rollback).
    type: str
    choices: [confirmed, rolled_back]
    default: confirmed
  netns:
    description: The network namespace the transaction was applied in (C(--netns)).
    type: str
  binary:
    description: Path of the netreconcile binary on the target.
    type: path
  state_dir:
    description: netreconcile's C(--state-dir), as given to the apply.
    type: path
  lock_timeout:
    description: netreconcile's C(--lock-timeout).
    type: str
  wireguard_go:
    description: netreconcile's C(--wireguard-go).
    type: path
seealso:
  - module: netreconcile.net.apply
'''

EXAMPLES = r'''
- name: Apply, rolled back in 2 minutes unless confirmed
  netreconcile.net.apply:
    path: /etc/netreconcile/netreconcile.yaml
    confirm_within: 2m
  register: applied

- name: Reconnect over the new network
  ansible.builtin.meta: reset_connection

- name: Confirm it
  netreconcile.net.confirm:
    transaction: "{{ applied.transaction_id }}"
  when: applied.transaction_id is not none
'''

RETURN = r'''
transaction_id:
  description: The transaction confirmed or rolled back, as netreconcile reports it.
  returned: when netreconcile reports one
  type: str
result:
  description: netreconcile's JSON report, as printed (C(schema_version), C(transaction), C(rollback), C(error)...; see
    docs/json.md).
  returned: always
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.netreconcile.net.plugins.module_utils import netreconcile as nr


def main():
    spec = nr.common_argument_spec()
    spec.update(
        transaction=dict(type='str'),
        state=dict(type='str', choices=['confirmed', 'rolled_back'], default='confirmed'),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=False)
    binary = nr.find_binary(module)
    command = nr.CONFIRM_COMMAND if module.params['state'] == 'confirmed' else nr.ROLLBACK_COMMAND
    if not nr.supports(module, binary, command, 'Usage: netreconcile ' + command):
        module.fail_json(msg='this netreconcile (%s) has no %s command' % (binary, command))
    positional = []
    if module.params['transaction']:
        positional.append(nr.check_transaction_id(module, module.params['transaction']))
    rc, data, err = nr.run_json(module, binary, [command] + nr.common_args(module), positional=positional)
    if rc != 0 or data.get('error'):
        module.fail_json(msg=data.get('error') or 'netreconcile %s exited %d: %s' % (command, rc, err.strip()), rc=rc, result=data)
    # Exit 0 is a transaction confirmed or rolled back: a change either way.
    module.exit_json(changed=True, transaction_id=nr.transaction_id(data), result=data)


if __name__ == '__main__':
    main()
