"""Output backends. Each module exposes emit(program, render) -> {path: content}."""

from . import abi, codec, conformance, docs, fuzz, kernel, user

BACKENDS = [abi, codec, kernel, user, conformance, docs, fuzz]
