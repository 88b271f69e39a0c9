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
    O(fact_name)), so that a play can build every host's peers from the others' facts.
  - A new key is made on the target by C(wg genkey) when C(wg) is installed, otherwise from
    C(os.urandom) clamped as RFC 7748 says. It is written atomically (a temporary file made with
    C(O_EXCL) and mode 0600 in the same directory, synced, renamed) and is never read back to the
    controller; the result holds only the public key and its fingerprint.
  - An existing key file must be a regular file owned by O(owner) and readable or writable by
    its owner only (0600 or 0400); the task fails otherwise, naming the file and its mode, and
    changes nothing (netreconcile would refuse it too).
  - The public key is computed on the target by C(wg pubkey), or where C(wg) is missing by a
    pure-Python X25519.
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
notes:
  - There is no option to give a private key, since a key the controller knows has left its host.
  - The parent directory is created with mode 0700 when missing.
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
  description: The public key (C(wg pubkey)), base64. Null in check mode when the key does not exist yet.
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
  description: What made a new key, C(wg genkey) or C(python); absent when the key existed.
  returned: when a key was created
  type: str
'''

import base64
import hashlib
import os
import pwd
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.netreconcile.net.plugins.module_utils import x25519


def owner_uid(module, owner):
    if owner is None:
        return os.geteuid()
    if owner.isdigit():
        return int(owner)
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        module.fail_json(msg='owner %s: no such user' % owner)


def check_existing(module, path, uid):
    """Refuse a key file anyone but its owner could read or change."""
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
    with os.fdopen(fd) as f:
        return f.read().strip()


def generate(module):
    wg = module.get_bin_path('wg')
    if wg:
        rc, out, err = module.run_command([wg, 'genkey'])
        if rc != 0:
            module.fail_json(msg='wg genkey failed: %s' % err.strip())
        return out.strip(), 'wg genkey'
    return x25519.generate_private(), 'python'


def public_key(module, private):
    wg = module.get_bin_path('wg')
    if wg:
        rc, out, err = module.run_command([wg, 'pubkey'], data=private, binary_data=False)
        if rc != 0:
            module.fail_json(msg='wg pubkey failed: %s' % err.strip())
        return out.strip()
    try:
        return x25519.public_from_private(private)
    except (ValueError, TypeError):
        module.fail_json(msg='the key file does not hold a WireGuard private key (44 characters of base64)')


def write_atomically(module, path, content, uid):
    d = os.path.dirname(path) or '.'
    if not os.path.isdir(d):
        os.makedirs(d, 0o700)
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=d)  # O_EXCL, mode 0600
    try:
        os.fchmod(fd, 0o600)
        os.fchown(fd, uid, -1)
        os.write(fd, (content + '\n').encode('ascii'))
        os.fsync(fd)
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
        ),
        supports_check_mode=True,
    )
    path = module.params['path']
    uid = owner_uid(module, module.params['owner'])
    result = dict(changed=False, path=path, public_key=None)
    if os.path.lexists(path):
        private = check_existing(module, path, uid)
    elif module.check_mode:
        result['changed'] = True
        module.exit_json(ansible_facts={module.params['fact_name']: None}, **result)
    else:
        private, result['generator'] = generate(module)
        module.no_log_values.add(private)
        write_atomically(module, path, private, uid)
        result['changed'] = True
    module.no_log_values.add(private)
    pub = public_key(module, private)
    result.update(public_key=pub, fingerprint=fingerprint(pub))
    module.exit_json(ansible_facts={module.params['fact_name']: pub}, **result)


if __name__ == '__main__':
    main()
