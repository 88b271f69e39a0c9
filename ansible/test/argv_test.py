"""What the collection's modules pass to the netreconcile binary.

    python3 argv_test.py COLLECTIONS_ROOT

Every positional argument goes after ``--`` and every option value is
joined to its option (``--name=value``), so that no value of a playbook is
read as an option; a transaction id is checked in the module (letters,
digits and dashes, not starting with a dash, at most 64) before anything
runs. The modules run against a stand-in for AnsibleModule that records
the command lines instead of running them.
"""
import json
import os
import sys
import types

sys.path.insert(0, sys.argv[1])


class Failed(Exception):
    pass


class Exited(Exception):
    pass


class FakeModule(object):
    """AnsibleModule as far as the modules use it."""

    def __init__(self, argument_spec=None, supports_check_mode=False, params=None, outputs=None):
        self.params = {k: None for k in (argument_spec or {})}
        for k, v in (argument_spec or {}).items():
            if 'default' in v:
                self.params[k] = v['default']
        self.params.update(params or {})
        self.commands = []
        self.outputs = outputs or {}
        self.check_mode = False
        self._diff = False

    def run_command(self, cmd, environ_update=None):
        self.commands.append(list(cmd))
        if '--help' in cmd:
            return 0, 'Usage: netreconcile %s --confirm-within' % cmd[1], ''
        out = dict(self.outputs.get(cmd[1], {}))
        out.setdefault('schema_version', nr.SCHEMA_VERSION)
        return 0, json.dumps(out), ''

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/usr/sbin/netreconcile'

    def fail_json(self, **kw):
        raise Failed(kw.get('msg'))

    def exit_json(self, **kw):
        raise Exited(kw)


# The modules import AnsibleModule from ansible.module_utils.basic: a
# stand-in, so that this test needs no ansible library.
basic = types.ModuleType('ansible.module_utils.basic')
for name in ('ansible', 'ansible.module_utils'):
    sys.modules.setdefault(name, types.ModuleType(name))
basic.AnsibleModule = FakeModule
sys.modules['ansible.module_utils.basic'] = basic

from ansible_collections.netreconcile.net.plugins.module_utils import netreconcile as nr  # noqa: E402

ok = 0

# Transaction ids.
for good in ['20261124T011546Z-2e1077', 'a', 'A-1', 'x' * 64]:
    assert nr.TRANSACTION_ID_RE.match(good), good
    ok += 1
for bad in ['', '-rf', '--help', '-', 'x' * 65, 'a;b', 'a b', 'a\n', '$(id)', '../x', 'a\x1b[2J', u'\u00e9', 'a\u0660']:
    try:
        nr.check_transaction_id(FakeModule(), bad)
    except Failed:
        ok += 1
    else:
        raise AssertionError('transaction id %r accepted' % bad)
    assert nr.transaction_id({'transaction': {'id': bad}}) is None, bad
assert nr.transaction_id({'transaction': {'id': '20261124T011546Z-2e1077'}}) == '20261124T011546Z-2e1077'

# Option values joined to their options, even those starting with a dash.
m = FakeModule(argument_spec=nr.common_argument_spec(),
               params={'netns': '-x', 'state_dir': '/var/lib/-s', 'lock_timeout': '-1s', 'wireguard_go': '/usr/bin/wireguard-go'})
assert nr.common_args(m) == ['--netns=-x', '--state-dir=/var/lib/-s', '--lock-timeout=-1s', '--wireguard-go=/usr/bin/wireguard-go'], nr.common_args(m)
ok += 1

# run_json: -o json among the options, the positional arguments after --.
m = FakeModule()
nr.run_json(m, '/usr/sbin/netreconcile', ['confirm', '--netns=lab'], positional=['20261124T011546Z-2e1077'])
assert m.commands[-1] == ['/usr/sbin/netreconcile', 'confirm', '--netns=lab', '-o', 'json', '--', '20261124T011546Z-2e1077'], m.commands[-1]
nr.run_json(m, '/usr/sbin/netreconcile', ['apply', '--config=/etc/x.yaml'])
assert '--' not in m.commands[-1], m.commands[-1]
ok += 1

# The confirm module: the id after --, or refused before anything runs.
confirm = __import__('ansible_collections.netreconcile.net.plugins.modules.confirm', fromlist=['main'])
for state, command in [('confirmed', 'confirm'), ('rolled_back', 'rollback')]:
    made = []

    def module_with(transaction, state=state, made=made):
        def new(argument_spec=None, supports_check_mode=False):
            fm = FakeModule(argument_spec, params={'transaction': transaction, 'state': state, 'netns': 'lab'},
                            outputs={command: {'transaction': {'id': transaction}}})
            made.append(fm)
            return fm
        return new

    confirm.AnsibleModule = module_with('20261124T011546Z-2e1077')
    try:
        confirm.main()
    except Exited:
        pass
    cmds = made[-1].commands
    run = [c for c in cmds if '--help' not in c]
    assert run == [['/usr/sbin/netreconcile', command, '--netns=lab', '-o', 'json', '--', '20261124T011546Z-2e1077']], cmds
    for c in cmds:
        assert c[1:] == [command, '--help'] or '--' in c, c
    ok += 1
    for bad in ['-h', '--state-dir=/tmp/x', 'x;reboot']:
        confirm.AnsibleModule = module_with(bad)
        try:
            confirm.main()
        except Failed as e:
            assert 'not a transaction id' in str(e), e
        else:
            raise AssertionError('confirm with transaction %r did not fail' % bad)
        assert [c for c in made[-1].commands if '--help' not in c] == [], made[-1].commands
        ok += 1

# The apply module: every option value joined, no bare value anywhere.
apply = __import__('ansible_collections.netreconcile.net.plugins.modules.apply', fromlist=['main'])
made = []


def new_apply(argument_spec=None, supports_check_mode=False, **kw):
    fm = FakeModule(argument_spec, params={'path': '/etc/netreconcile/netreconcile.yaml', 'confirm_within': '2m',
                                           'probes': ['tcp:10.0.0.1:22', '-x'], 'netns': 'lab'},
                    outputs={'apply': {'ops': [], 'transaction': {'id': '20261124T011546Z-2e1077'}}})
    made.append(fm)
    return fm


apply.AnsibleModule = new_apply
try:
    apply.main()
except Exited as e:
    assert e.args[0]['transaction_id'] == '20261124T011546Z-2e1077', e.args[0]
run = [c for c in made[-1].commands if '--help' not in c]
assert len(run) == 1, made[-1].commands
for a in run[0][2:]:
    assert a.startswith('--') and '=' in a or a in ('-o', 'json'), run[0]
assert '--probe=-x' in run[0], run[0]
ok += 1

print('argv: %d checks hold (ids checked in the module, -- before positional arguments, option values joined)' % ok)
os._exit(0)
