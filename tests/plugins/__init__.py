"""Summarizers from outside the engine, importable by path ("tests.plugins.acme:make")."""
