# The configuration's JSON Schema, docs/schema/config.json, written from the
# loader's types and docs/config.md's tables (internal/desired/schemagen).
# A test fails when the committed file is out of date: run this, commit it.
.PHONY: schema
schema:
	$(GO) generate ./internal/desired
