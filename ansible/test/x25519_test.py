"""The collection's pure-Python X25519 against RFC 7748 and wg pubkey.

    python3 x25519_test.py PLUGINS/module_utils
"""
import base64
import binascii
import os
import shutil
import subprocess
import sys

sys.path.insert(0, sys.argv[1])
import x25519  # noqa: E402

h = binascii.unhexlify
# RFC 7748 section 5.2, the two single-step vectors.
for k, u, want in [
    ('a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4',
     'e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c',
     'c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552'),
    ('4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d',
     'e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493',
     '95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957'),
]:
    got = binascii.hexlify(x25519.scalarmult(h(k), h(u))).decode()
    assert got == want, (k, got, want)
# RFC 7748 section 6.1: Alice's and Bob's public keys and the shared secret.
a = h('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a')
b = h('5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb')
A, B = x25519.scalarmult(a, x25519.BASE), x25519.scalarmult(b, x25519.BASE)
assert binascii.hexlify(A) == b'8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a'
assert binascii.hexlify(B) == b'de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f'
assert x25519.scalarmult(a, B) == x25519.scalarmult(b, A) == h('4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742')
print('x25519: RFC 7748 vectors (5.2, 6.1) hold')

# Clamping: what generate_private makes is what wg would keep.
k = base64.b64decode(x25519.generate_private())
assert len(k) == 32 and k[0] & 7 == 0 and k[31] & 128 == 0 and k[31] & 64

wg = shutil.which('wg')
if not wg:
    sys.exit('x25519: wg is missing: cannot compare with wg pubkey (make ansible-test installs wireguard-tools)')
for i in range(20):
    priv = x25519.generate_private() if i % 2 else subprocess.run([wg, 'genkey'], capture_output=True, text=True, check=True).stdout.strip()
    want = subprocess.run([wg, 'pubkey'], input=priv + '\n', capture_output=True, text=True, check=True).stdout.strip()
    assert x25519.public_from_private(priv) == want, priv
# An unclamped key: wg pubkey clamps it, and so does the Python.
raw = base64.b64encode(os.urandom(32)).decode()
want = subprocess.run([wg, 'pubkey'], input=raw + '\n', capture_output=True, text=True, check=True).stdout.strip()
assert x25519.public_from_private(raw) == want
print('x25519: 21 key pairs agree with wg pubkey (10 from wg genkey, 10 made in Python, 1 unclamped)')
