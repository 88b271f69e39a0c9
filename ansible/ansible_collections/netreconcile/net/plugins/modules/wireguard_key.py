#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: netreconcile developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: wireguard_key
short_description: A WireGuard private key that never leaves its host, and its public key as a fact
version_added: 0.1.0
description:
  - Makes sure a WireGuard private key file exists on the target, creating one when there is
    none, and returns its public key, also as the fact C(netreconcile_wireguard_public_key) (or
    C(fact_name)), so that a play can build every host's peers from the others' facts.
  - The key is made and its public key derived on the target by the netreconcile binary
    (C(netreconcile wireguard genkey) and C(wireguard pubkey), X25519 from the Go libraries
    netreconcile is built with), so the target needs no wireguard-tools.
  - The private key never passes through the module. C(genkey) writes it straight into a
    temporary file made with C(O_EXCL) and mode 0600 in the key's directory, which is synced and
    renamed into place; C(pubkey) reads the key file on its standard input. The result holds
    only the public key and its fingerprint.
  - An existing key file must be a regular file owned by C(owner) and readable or writable by
    its owner only (0600 or 0400); the task fails otherwise, naming the file and its mode, and
    changes nothing (netreconcile would refuse it too).
author:
  - netreconcile developers (@netreconcile)
attributes:
  check_mode:
    support: full
    description: Reports that a key would be created; the public key is then unknown (null).
  diff_mode:
    support: none
    description: Key material is never shown.
options:
  path:
    description: The private key file on the target, as netreconcile's C(private-key-file) names it.
    type: path
    required: true
  owner:
    description:
      - Owner of the file (a user name or uid). New files get it; an existing file owned by
        another user is refused. Default the user the module runs as (root).
    type: str
  fact_name:
    description: The name of the fact that holds the public key.
    type: str
    default: netreconcile_wireguard_public_key
  binary:
    description:
      - Path of the netreconcile binary on the target. Default C(netreconcile) from C($PATH),
        C(/usr/sbin), C(/usr/local/sbin).
    type: path
notes:
  - There is no option to give a private key, since a key the controller knows has left its host.
  - The parent directory is created with mode 0700 when missing.
  - Needs a netreconcile that has the C(wireguard) command (1.0 or later).
seealso:
  - module: netreconcile.net.apply
'''

EXAMPLES = r'''
- name: The mesh key of this host
  netreconcile.net.wireguard_key:
    path: /etc/netreconcile/kubespan.key
  register: key

- name: Every host knows every other host's public key from its facts
  ansible.builtin.debug:
    msg: "{{ hostvars[item].netreconcile_wireguard_public_key }}"
  loop: "{{ groups['mesh'] }}"
'''

RETURN = r'''
public_key:
  description: The public key, base64, as C(wg pubkey) prints it. Null in check mode when the key does not exist yet.
  returned: always
  type: str
  sample: xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
fingerprint:
  description: C(SHA256:) and the unpadded base64 SHA-256 of the public key's 32 bytes, to compare keys in logs.
  returned: when the key exists
  type: str
  sample: SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU
path:
  description: The key file.
  returned: always
  type: str
generator:
  description: What made a new key, C(netreconcile wireguard genkey); absent when the key existed.
  returned: when a key was created
  type: str
'''

import base64
import hashlib
import os
import pwd
import stat
import subprocess
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.netreconcile.net.plugins.module_utils import netreconcile as nr

# netreconcile's exit status for a usage error: a binary without the
# wireguard command says so.
EXIT_USAGE = 64


def owner_uid(module, owner):
    if owner is None:
        return os.geteuid()
    if owner.isdigit():
        return int(owner)
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        module.fail_json(msg='owner %s: no such user' % owner)


def key_command(module, binary, command, stdin=None, stdout=None):
    """Run ``binary wireguard COMMAND`` on the given descriptors.

    The private key only ever moves between the binary and a file: stdin
    is the key file for pubkey, stdout the new key file for genkey.
    Returns what it printed on standard output when stdout is None.
    """
    argv = [binary, 'wireguard', command]
    try:
        p = subprocess.Popen(argv, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                             stdout=stdout if stdout is not None else subprocess.PIPE,
                             stderr=subprocess.PIPE, env=dict(os.environ, LC_ALL='C'))
        out, err = p.communicate()
    except OSError as e:
        module.fail_json(msg='run %s: %s' % (' '.join(argv), e))
    err = err.decode('utf-8', 'replace').strip()
    if p.returncode == EXIT_USAGE:
        module.fail_json(msg='%s has no wireguard %s command (netreconcile 1.0 or later has): %s' % (binary, command, err))
    if p.returncode != 0:
        if command == 'pubkey':
            module.fail_json(msg='the key file does not hold a WireGuard private key (44 characters of base64): %s' % err)
        module.fail_json(msg='netreconcile wireguard %s failed (exit %d): %s' % (command, p.returncode, err))
    return out.decode('ascii').strip() if out is not None else None


def open_existing(module, path, uid):
    """Open a key file anyone but its owner could read or change: refused."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        module.fail_json(msg='%s is not a regular file' % path)
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        os.close(fd)
        module.fail_json(msg='%s is mode %04o: a private key file must be readable and writable by its owner only '
                             '(0600 or 0400); fix the mode (chmod 600) or remove the file to make a new key' % (path, mode),
                         path=path, mode='%04o' % mode)
    if st.st_uid != uid:
        os.close(fd)
        module.fail_json(msg='%s is owned by uid %d, not %d' % (path, st.st_uid, uid), path=path)
    return fd


def create(module, binary, path, uid):
    """Make a key into a new file at path, atomically; return its public key."""
    d = os.path.dirname(path) or '.'
    if not os.path.isdir(d):
        os.makedirs(d, 0o700)
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=d)  # O_EXCL, mode 0600
    try:
        os.fchmod(fd, 0o600)
        os.fchown(fd, uid, -1)
        key_command(module, binary, 'genkey', stdout=fd)
        os.fsync(fd)
        os.lseek(fd, 0, os.SEEK_SET)
        pub = key_command(module, binary, 'pubkey', stdin=fd)
        os.close(fd)
        fd = None
        if os.path.lexists(path):  # made meanwhile by someone else: keep theirs
            module.fail_json(msg='%s appeared while the key was written; run again' % path)
        os.rename(tmp, path)
        tmp = None
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        return pub
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None:
            os.unlink(tmp)


def fingerprint(pub):
    raw = base64.b64decode(pub)
    return 'SHA256:' + base64.b64encode(hashlib.sha256(raw).digest()).decode('ascii').rstrip('=')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True, no_log=False),
            owner=dict(type='str'),
            fact_name=dict(type='str', default='netreconcile_wireguard_public_key'),
            binary=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    path = module.params['path']
    uid = owner_uid(module, module.params['owner'])
    result = dict(changed=False, path=path, public_key=None)
    if os.path.lexists(path):
        binary = nr.find_binary(module)
        fd = open_existing(module, path, uid)
        try:
            pub = key_command(module, binary, 'pubkey', stdin=fd)
        finally:
            os.close(fd)
    elif module.check_mode:
        result['changed'] = True
        module.exit_json(ansible_facts={module.params['fact_name']: None}, **result)
    else:
        pub = create(module, nr.find_binary(module), path, uid)
        result.update(changed=True, generator='netreconcile wireguard genkey')
    result.update(public_key=pub, fingerprint=fingerprint(pub))
    module.exit_json(ansible_facts={module.params['fact_name']: pub}, **result)


if __name__ == '__main__':
    main()
