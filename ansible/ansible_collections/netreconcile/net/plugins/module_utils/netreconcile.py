# -*- coding: utf-8 -*-
# Copyright: netreconcile developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Run the netreconcile binary and read its JSON.

Everything the collection knows about netreconcile's command line is here:
the options, the JSON each command prints with ``-o json``, and how a plan
becomes Ansible's ``diff``. Nothing parses netreconcile's text output.

The JSON is netreconcile's 1.0 contract (docs/json.md, a JSON Schema per
command in docs/schema): one document on standard output, on success and on
failure, starting with ``schema_version``; every field present (``null``
when it does not apply); snake_case names and values (``"kind":
"nft_table"``); ``error`` set exactly when the command failed.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fcntl
import grp
import hashlib
import json
import os
import re
import shutil
import tempfile

# Where the Debian package installs the binary; searched after $PATH.
BINARY_DIRS = ['/usr/sbin', '/usr/local/sbin', '/usr/bin']

# The version of netreconcile's JSON contract this collection reads; a binary
# that prints another (or none: before 1.0) is refused with a clear message.
SCHEMA_VERSION = 1

# The safe-apply commands (docs/safe-apply.md):
#   - ``apply --confirm-within DURATION`` with ``--probe PROBE`` given once
#     per probe, and ``-o json``;
#   - its JSON holds the transaction's id at ``transaction.id``;
#   - ``confirm [ID] -o json`` and ``rollback [ID] -o json`` exit 0 when they
#     did what they say, and 1 with ``error`` set when there was nothing to
#     confirm or roll back, or when a confirmation came too late (the
#     transaction was rolled back instead).
CONFIRM_WITHIN_FLAG = '--confirm-within'
PROBE_FLAG = '--probe'
TRANSACTION_ID_PATH = ('transaction', 'id')
CONFIRM_COMMAND = 'confirm'
ROLLBACK_COMMAND = 'rollback'

# The exit status of ``diff`` when changes are pending; of ``apply --plan``
# when the saved plan is stale; of ``apply --max-disruption`` when the plan
# disrupts more.
EXIT_CHANGES = 2
EXIT_STALE = 3
EXIT_DISRUPTION = 4

# Saved plans, disruption and warnings (docs/plans.md).
PLAN_OUT_FLAG = '--out'
PLAN_FLAG = '--plan'
MAX_DISRUPTION_FLAG = '--max-disruption'
STRICT_FLAG = '--strict'

# A transaction id as netreconcile makes and accepts them
# (20261124T011546Z-2e1077): letters, digits and dashes, not starting with a
# dash, at most 64 characters. Checked here too, so that no value of a
# playbook reaches the command line as an option.
TRANSACTION_ID_RE = re.compile(r'\A[A-Za-z0-9][A-Za-z0-9-]{0,63}\Z')


def check_transaction_id(module, value, what='transaction'):
    """Fail the module unless value is a transaction id."""
    if not isinstance(value, str) or not TRANSACTION_ID_RE.match(value):
        module.fail_json(msg='%s: not a transaction id (letters, digits and dashes, not starting with a dash, '
                         'at most 64): %r' % (what, value))
    return value


# Shown in place of the temporary file an inline ``config`` is written to,
# so that positions read ``<inline config>:3:9: links.br0.mtu: ...``.
INLINE_LABEL = '<inline config>'

SIGILS = {'create': '+', 'update': '~', 'replace': u'\u00b1', 'delete': '-'}


def common_argument_spec():
    """Options every module of the collection takes."""
    return dict(
        binary=dict(type='path'),
        netns=dict(type='str'),
        state_dir=dict(type='path'),
        lock_timeout=dict(type='str'),
        wireguard_go=dict(type='path'),
    )


def find_binary(module):
    """The netreconcile binary: the ``binary`` option, else $PATH and BINARY_DIRS."""
    path = module.params.get('binary')
    if path:
        if not os.access(path, os.X_OK):
            module.fail_json(msg='binary %s is not an executable file' % path)
        return path
    return module.get_bin_path('netreconcile', required=True, opt_dirs=BINARY_DIRS)


def common_args(module):
    """The common options, in netreconcile's spelling.

    ``netns`` becomes ``--netns NAME`` rather than ``ip netns exec NAME``:
    netreconcile keeps one lock and one ownership ledger per namespace
    (STATE-DIR/netns/NAME) only when it is told the namespace; under
    ``ip netns exec`` it would take the namespace for the host's and share
    the host's ledger (docs/config.md, "The state directory").

    Each value is joined to its option (``--netns=NAME``): a value that
    starts with a dash stays a value.
    """
    p = module.params
    args = []
    if p.get('netns') is not None:
        if p['netns'] == '':
            module.fail_json(msg='netns is empty: give a namespace name, or leave netns out for the host')
        args.append('--netns=' + p['netns'])
    if p.get('state_dir'):
        args.append('--state-dir=' + p['state_dir'])
    if p.get('lock_timeout'):
        args.append('--lock-timeout=' + p['lock_timeout'])
    if p.get('wireguard_go'):
        args.append('--wireguard-go=' + p['wireguard_go'])
    return args


# Where inline configurations live between runs (inline_dir's default).
INLINE_BASE = '/var/lib/netreconcile-ansible'


def inline_dir_for(netns, state_dir):
    """The default directory of the inline configuration of one namespace
    (and state directory): INLINE_BASE/NETNS, or host for the target's own,
    with a hash of a state_dir given."""
    key = netns or 'host'
    if state_dir:
        key += '-' + hashlib.sha256(os.path.abspath(state_dir).encode()).hexdigest()[:12]
    return os.path.join(INLINE_BASE, key)


# The packaged service's group. Root on a packaged host runs netreconcile as
# that service's user (docs/config.md, "The state directory"), which must read
# the inline configuration: where the group exists, root's files here are
# the group's to read (0750 directories, 0640 files), never to write.
SERVICE_GROUP = 'netreconcile'


def _service_gid():
    """The service's group id when this runs as root and it exists, else None."""
    if os.geteuid() != 0:
        return None
    try:
        return grp.getgrnam(SERVICE_GROUP).gr_gid
    except KeyError:
        return None


def _share_dir(path, gid):
    """Give a directory of ours to the service's group, read-only."""
    if gid is not None:
        os.chown(path, 0, gid)
        os.chmod(path, 0o750)


def _write_private(path, data, gid=None):
    """Write data (a JSON value) to path atomically, mode 0600 (0640 for
    the service's group gid)."""
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', dir=d)  # mode 0600
    try:
        if gid is not None:
            os.fchown(fd, 0, gid)
            os.fchmod(fd, 0o640)
        with os.fdopen(fd, 'w') as f:
            json.dump(data, f, indent=2)
            f.write('\n')
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            os.unlink(tmp)


class Source(object):
    """The configuration a command reads: a file on the target, or an
    inline dictionary written to the target.

    An inline configuration is written to a directory kept between runs
    (inline_dir: netreconcile.yaml and conf.d/), so that a confirmed apply's
    rollback, which writes the restore point's files back where they were,
    finds them there; a run that writes nothing (check mode, validation)
    uses a private temporary directory instead. The kept directory is
    locked for the run: two runs for one namespace do not write over each
    other's file."""

    def __init__(self, module, config=None, path=None, conf_dir=None, drop_ins=None, inline_dir=None):
        self.module = module
        self.tmpdir = None
        self.lock = None
        self.labels = {}
        self.path = path
        self.conf_dir = conf_dir
        if config is None:
            return
        # 0700 directory, 0600 files: netreconcile refuses a configuration
        # others could write, and the file may name key files (0750 and
        # 0640 with the service's group, which reads them: _service_gid). JSON is
        # YAML: no YAML library is needed on the target, and every key is
        # on a line of its own for the positions.
        names = sorted((drop_ins or {}).keys())
        for name in names:
            if '/' in name or name.startswith('.') or not name.endswith(('.yaml', '.yml')):
                module.fail_json(msg='drop_ins: %r is not a drop-in file name (NAME.yaml, no "/", not hidden)' % name)
        gid = _service_gid()
        if inline_dir is None:
            d = self.tmpdir = tempfile.mkdtemp(prefix='ansible-netreconcile-')
            _share_dir(d, gid)
        else:
            d = inline_dir
            try:
                os.makedirs(d, 0o700, exist_ok=True)
                _share_dir(d, gid)
                st = os.lstat(d)
                others = 0o077 if gid is None else 0o027
                if not os.path.isdir(d) or os.path.islink(d) or st.st_uid != os.geteuid() or st.st_mode & others:
                    module.fail_json(msg='inline_dir %s: must be a directory of ours that no one else can write, '
                                     'or read but the service (mode 0700, or 0750 with group %s)' % (d, SERVICE_GROUP))
                self.lock = os.open(os.path.join(d, '.lock'), os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(self.lock, fcntl.LOCK_EX)
            except OSError as e:
                module.fail_json(msg='inline_dir %s: %s' % (d, e))
        self.path = os.path.join(d, 'netreconcile.yaml')
        self.conf_dir = os.path.join(d, 'conf.d')
        try:
            if not os.path.isdir(self.conf_dir):
                os.mkdir(self.conf_dir, 0o700)
            _share_dir(self.conf_dir, gid)
            _write_private(self.path, config, gid)
            # The drop-ins given, and no other: none is read by accident.
            for old in os.listdir(self.conf_dir):
                if old not in names and old.endswith(('.yaml', '.yml')):
                    os.unlink(os.path.join(self.conf_dir, old))
            for name in names:
                self.labels[os.path.join(self.conf_dir, name)] = '<inline drop-in %s>' % name
                _write_private(os.path.join(self.conf_dir, name), drop_ins[name], gid)
        except OSError as e:
            module.fail_json(msg='write the inline configuration to %s: %s' % (d, e))
        self.labels[self.path] = INLINE_LABEL

    def args(self):
        args = ['--config=' + self.path]
        if self.conf_dir:
            args.append('--conf-dir=' + self.conf_dir)
        return args

    def relabel(self, text):
        """Replace the inline files' paths by their labels."""
        if isinstance(text, str):
            for path, label in self.labels.items():
                text = text.replace(path, label)
        return text

    def cleanup(self):
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None
        if self.lock is not None:
            os.close(self.lock)
            self.lock = None


def run_json(module, binary, argv, source=None, positional=None):
    """Run ``binary argv... -o json -- positional...`` and return (rc,
    parsed JSON, stderr). Options go in argv, with their values joined
    (``--name=value``); every positional argument goes after ``--``, so that
    none is ever read as an option.

    A command that prints no JSON fails the module with its standard error:
    that is netreconcile refusing its command line, or not netreconcile.
    """
    cmd = [binary] + argv + ['-o', 'json']
    if positional:
        cmd += ['--'] + list(positional)
    rc, out, err = module.run_command(cmd, environ_update={'LC_ALL': 'C'})
    if source is not None:
        out, err = source.relabel(out), source.relabel(err)
    try:
        data = json.loads(out) if out.strip() else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        module.fail_json(msg='%s %s printed no JSON (exit %d): %s' % (os.path.basename(binary), argv[0], rc, err.strip() or out.strip()),
                         rc=rc, cmd=cmd)
    if data.get('schema_version') != SCHEMA_VERSION:
        module.fail_json(msg='%s %s printed JSON of schema version %s; this collection reads version %d (netreconcile 1.x)'
                         % (os.path.basename(binary), argv[0], data.get('schema_version'), SCHEMA_VERSION), rc=rc, cmd=cmd)
    return rc, data, err


def supports(module, binary, command, flag):
    """Whether ``binary COMMAND --help`` documents FLAG (no positional
    argument: a command's own help)."""
    rc, out, err = module.run_command([binary, command, '--help'])
    return rc == 0 and flag in out


def transaction_id(data):
    """The transaction id in apply's JSON (TRANSACTION_ID_PATH), or None;
    anything but an id (TRANSACTION_ID_RE) is None, never passed on."""
    for key in TRANSACTION_ID_PATH:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    if isinstance(data, str) and TRANSACTION_ID_RE.match(data):
        return data
    return None


def failure(data, source=None):
    """The parts of a JSON report that say why a command failed."""
    out = {}
    for key in ('errors', 'error_count', 'conflicts', 'failed'):
        if data.get(key):
            out[key] = data[key]
    if source is not None:
        for e in out.get('errors', []):
            e['file'] = source.relabel(e.get('file'))
            e['text'] = source.relabel(e.get('text'))
    return out


def kind_words(op):
    """An operation's kind as netreconcile's text names it: the JSON's
    ``nft_table`` is ``nft table`` in ``netreconcile diff``."""
    return (op.get('kind') or '').replace('_', ' ')


def plan_text(ops):
    """The plan as ``netreconcile diff`` prints it (diff.WriteOps)."""
    lines = []
    for op in ops:
        line = '%s %s %s' % (SIGILS.get(op.get('action'), '?'), kind_words(op), op.get('id'))
        if op.get('summary'):
            line += ' (%s)' % op['summary']
        if op.get('reason'):
            line += ': %s' % op['reason']
        if op.get('disruption') and op['disruption'] not in ('in_place', 'in-place'):
            line += ' [%s]' % op['disruption'].replace('_', ' ').replace('-', ' ')
        lines.append(line)
        for c in op.get('changes') or []:
            f, a, b = c.get('field'), c.get('from'), c.get('to')
            if not a and not b:
                lines.append('    %s' % f)
            elif not a:
                lines.append('    %s: %s' % (f, b))
            elif not b:
                lines.append('    %s: %s -> (none)' % (f, a))
            else:
                lines.append('    %s: %s -> %s' % (f, a, b))
    return '\n'.join(lines) + ('\n' if lines else '')


def warning_text(w):
    """A plan warning as netreconcile prints it (diff.Warning)."""
    return '%s: %s; fix: %s' % (', '.join(w.get('keys') or []), w.get('message', ''), w.get('fix', ''))


def summary(ops):
    counts = {}
    for op in ops:
        counts[op.get('action')] = counts.get(op.get('action'), 0) + 1
    return '%d to create, %d to update, %d to replace, %d to delete' % tuple(
        counts.get(a, 0) for a in ('create', 'update', 'replace', 'delete'))


def ansible_diff(ops, header):
    """Ansible's diff of a plan: before and after per object, keyed
    ``KIND ID``, and the plan's text under ``prepared``.

    An object created has no ``before``; one deleted no ``after``; one
    changed shows each changed field's old and new value; one replaced
    shows ``replaced`` in both.
    """
    before, after = {}, {}
    for op in ops:
        key = '%s %s' % (kind_words(op), op.get('id'))
        action = op.get('action')
        changes = op.get('changes') or []
        if action == 'create':
            a = {'present': True}
            if op.get('summary'):
                a['summary'] = op['summary']
            for c in changes:
                a[c.get('field')] = c.get('to') or ''
            after[key] = a
        elif action == 'delete':
            b = {'present': True}
            if op.get('summary'):
                b['summary'] = op['summary']
            before[key] = b
        else:
            b, a = {}, {}
            for c in changes:
                b[c.get('field')] = c.get('from') or ''
                a[c.get('field')] = c.get('to') or ''
            if action == 'replace':
                b['replaced'] = a['replaced'] = True
                if op.get('summary'):
                    a['summary'] = op['summary']
                if op.get('reason'):
                    a['reason'] = op['reason']
            before[key], after[key] = b, a
    prepared = plan_text(ops)
    if prepared:
        prepared += '\nPlan: %s.\n' % summary(ops)
    return dict(before=before, after=after, before_header=header, after_header=header, prepared=prepared)
