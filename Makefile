# The README's two commands. Each makes the environment in .venv once (when requirements.txt or
# pyproject.toml changed since), then builds the book or runs the tests.
PYTHON ?= python3
VENV ?= .venv

.PHONY: book test env

env: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -r requirements.txt
	$(VENV)/bin/python -m ipykernel install --sys-prefix --name python3
	touch $@

book: env
	$(VENV)/bin/python -m companions build -- -W -n --keep-going

test: env
	$(VENV)/bin/python -m pytest -q -n auto
