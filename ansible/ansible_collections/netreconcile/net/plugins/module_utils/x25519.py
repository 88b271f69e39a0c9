# -*- coding: utf-8 -*-
# Copyright: netreconcile developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""X25519 (RFC 7748) in pure Python: WireGuard's key pair without wg.

Used only where neither ``wg`` is installed: a private key is 32 random
bytes clamped as RFC 7748 section 5 says, its public key the scalar
multiplication of the base point u=9. The Montgomery ladder below is the
RFC's own pseudocode (section 5), with the conditional swaps done by
arithmetic. Python integers are not constant-time: this runs once per key,
on the host that keeps the key, where nobody else times it.
tests/x25519_test.py checks it against the RFC's vectors and ``wg pubkey``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import os

P = 2 ** 255 - 19
A24 = 121665


def _decode_u(b):
    # RFC 7748: the most significant bit of the last byte is ignored.
    b = bytearray(b)
    b[31] &= 127
    return int.from_bytes(bytes(b), 'little')


def _decode_scalar(k):
    k = bytearray(k)
    k[0] &= 248
    k[31] &= 127
    k[31] |= 64
    return int.from_bytes(bytes(k), 'little')


def clamp(k):
    """The private key as WireGuard stores it (wg genkey clamps too)."""
    return _decode_scalar(k).to_bytes(32, 'little')


def scalarmult(k, u):
    """X25519(k, u) of RFC 7748 section 5, on 32-byte strings."""
    k = _decode_scalar(k)
    x1 = _decode_u(u)
    x2, z2, x3, z3 = 1, 0, x1, 1
    swap = 0
    for t in reversed(range(255)):
        kt = (k >> t) & 1
        swap ^= kt
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = kt
        a = (x2 + z2) % P
        aa = a * a % P
        b = (x2 - z2) % P
        bb = b * b % P
        e = (aa - bb) % P
        c = (x3 + z3) % P
        d = (x3 - z3) % P
        da = d * a % P
        cb = c * b % P
        x3 = (da + cb) ** 2 % P
        z3 = x1 * (da - cb) ** 2 % P
        x2 = aa * bb % P
        z2 = e * (aa + A24 * e) % P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, P - 2, P) % P).to_bytes(32, 'little')


BASE = (9).to_bytes(32, 'little')


def generate_private():
    """A new private key, base64 as wg genkey prints it (without newline)."""
    return base64.b64encode(clamp(os.urandom(32))).decode('ascii')


def public_from_private(private_b64):
    """The public key of a base64 private key, base64 as wg pubkey prints it."""
    k = base64.b64decode(private_b64.strip(), validate=True)
    if len(k) != 32:
        raise ValueError('a WireGuard key is 32 bytes')
    return base64.b64encode(scalarmult(k, BASE)).decode('ascii')
