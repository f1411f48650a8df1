# qjm: two commands set everything up on a fresh Debian machine (as root):
#   make demo   - a local cluster you can watch: ZooKeeper, 3 JournalNodes, 2 NameNodes and
#                 their failover controllers; a workload while the active NameNode is killed
#                 with kill -9 and the other takes over (the failover time is printed); it
#                 stays up until Ctrl-C. make demo ARGS="--once" runs the scenario, stops the
#                 cluster and exits (0 when every acknowledged op survived the failover);
#                 other options: ARGS="--dir D --base-port P" (DEMO_ARGS works too)
#   make test   - the whole test suite (two pytest workers; `make test-fast` skips the
#                 tests marked slow, the real-process scenarios)
#   make chaos  - real daemons under a seeded nemesis while HA clients write, every call
#                 checked against the recorded history (docs/reliability.md); options:
#                 ARGS="--seed N --actions N (or --duration S) --dir D --clients N --kinds K,..."
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEBIAN_PACKAGES := zookeeper default-jdk-headless curl chromium chromium-driver krb5-kdc \
	krb5-admin-server krb5-user libkrb5-dev gcc python3-dev
# protoc for `make proto` only: grpcio-tools (it bundles protoc) in a throwaway venv, so
# neither grpc nor protoc is a dependency of the project. Its output targets protobuf 7.x.
PROTOC_VENV := build/protoc-venv
PROTOC_TOOLS := grpcio-tools==1.85.1
PROTOS := src/qjm/protocol/qjournal.proto $(wildcard src/qjm/ipc/proto/*.proto) \
  src/qjm/namenode/image/fsimage.proto $(wildcard src/qjm/namenode/proto/*.proto) \
  $(wildcard src/qjm/hdfs/proto/*.proto) \
  $(wildcard src/qjm/ha/*.proto)

.PHONY: install test test-fast lint demo chaos chaos-data proto debian clean bench

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory debian
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

# Debian packages the tests need (ZooKeeper; a JDK: the JRE runs Hadoop's client and javac
# builds the Java API judges; Chromium and its driver for the status page's browser test;
# MIT Kerberos: a real KDC, kadmin.local and kinit for the Kerberos tests, and libkrb5-dev
# to build the gssapi and kerberos (pykerberos, kazoo's SASL) Python packages, which gcc
# and the Python headers compile: pykerberos ships no wheel); installed only when missing.
debian:
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

$(PROTOC_VENV)/.installed:
	@test -x $(PROTOC_VENV)/bin/python || $(PYTHON) -m venv $(PROTOC_VENV)
	$(PROTOC_VENV)/bin/python -m pip install --quiet --disable-pip-version-check '$(PROTOC_TOOLS)'
	@touch $@

# Regenerate every *_pb2.py and .pyi beside its .proto (the generated files are committed).
proto: $(PROTOC_VENV)/.installed
	$(PROTOC_VENV)/bin/python -m grpc_tools.protoc -I src --python_out=src --pyi_out=src $(PROTOS)

# Three workers, a test file to each at a time (module fixtures start once): most tests wait
# on real processes (a whole run kept 2 cores about 60 % busy with two workers), so three
# workers on two cores finish in far less time than two.
PYTEST_WORKERS ?= 3
test: install
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile

test-fast: install
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "not slow"

lint: install
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy
	$(PY) tests/import_layers.py

demo: install
	$(PY) -m qjm.cli.demo $(DEMO_ARGS) $(ARGS)

chaos: install
	$(PY) -m qjm.testing.chaos $(ARGS)

# File bytes under DataNode kills, flipped replicas and NameNode kills (docs/reliability.md).
chaos-data: install
	$(PY) -m qjm.testing.chaos.data_run $(ARGS)

# The side-by-side benchmark also needs etcd and ZooKeeper from Debian (installed when missing).
bench: install
	@$(MAKE) --no-print-directory debian DEBIAN_PACKAGES="etcd-server zookeeper default-jre-headless"
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	$(PY) -m benchmarks.run $(ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache
