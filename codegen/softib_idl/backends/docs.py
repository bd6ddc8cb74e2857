"""Placeholder until the real backend lands (H4/H5 overwrite this file)."""


def emit(program, render):
    return {}
