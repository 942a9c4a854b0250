# Two commands on a fresh machine (see README):
#   make run    install the app's requirements and serve the app on the shipped model
#   make test   install the test requirements (Debian's Chromium included) and run ruff + every test
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test install install-dev chromium bench

$(BIN)/python:
	$(PY) -m venv $(VENV)

install: $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt

install-dev: install
	$(BIN)/pip install -q -r requirements-dev.txt

chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }

run: install
	$(BIN)/python app.py

test: install-dev chromium
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

bench: install-dev chromium
	$(BIN)/python -m bench
