"""Helpers shared by tests of several families (docs/reference/layout.md)."""
