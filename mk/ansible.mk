# The Ansible collection (ansible/, docs/ansible.md):
#   make ansible-test   Debian's ansible-core (installed when missing) runs the
#                       collection's modules and role with `connection: local`,
#                       each "host" a network namespace (ans-*), and the
#                       three-namespace WireGuard mesh of the fleet example;
#                       then ansible-test sanity, offline. Needs root.
# Every check fails the target when it does not hold (ansible/test/run.sh).
TEST_TARGETS += ansible-test
# Confirm windows, deadlines and handshakes: under half a core. First in
# the side lane, beside the systemd guest's boot.
TEST_SIDE += ansible-test
TEST_PREPARE += ansible-deps
ANSIBLE_TOOLS := ansible-playbook:ansible-core pylint:pylint pycodestyle:pycodestyle yamllint:yamllint
ANSIBLE_PY := voluptuous:python3-voluptuous packaging.specifiers:python3-packaging

.PHONY: ansible-test ansible-deps
ansible-deps:
	@missing=""; for pair in $(ANSIBLE_TOOLS); do \
		command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; \
	done; \
	for pair in $(ANSIBLE_PY); do \
		/usr/bin/python3 -c "import $${pair%%:*}" 2>/dev/null || missing="$$missing $${pair#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

ansible-test: build test-tools ansible-deps
	ansible/test/run.sh $(BIN)
