"""The thin setuptools shim: the package's metadata is in pyproject.toml (PEP 621)."""

from setuptools import setup

setup()
