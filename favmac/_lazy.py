"""Public names of a package imported on first use (PEP 562), so ``import favmac`` stays light.

A package lists each public name with the submodule that defines it; :func:`lazy_exports`
gives it the module ``__getattr__`` and ``__dir__`` and its ``__all__``, all from that one map.

>>> namespace = {"__name__": "favmac"}
>>> getattr_, dir_, all_ = lazy_exports(namespace, {"exact": "thresholds"})
>>> all_, getattr_("exact") is namespace["exact"]
(['exact'], True)
"""
from __future__ import annotations

import importlib

__all__ = ["lazy_exports"]


def lazy_exports(namespace: dict, exports: dict[str, str], *, eager=(), submodules: bool = False):
    """``(__getattr__, __dir__, __all__)`` for the package whose globals are ``namespace``.

    Parameters
    ----------
    namespace : dict
        The package's ``globals()``; a name, once imported, is cached there.
    exports : dict
        Public name -> the submodule (relative to the package) that defines it.
    eager : sequence of str
        Public names the package binds itself at import (they join ``__all__``).
    submodules : bool
        Whether an unknown name may be a submodule (``favmac.thresholds`` after a bare
        ``import favmac``).
    """
    package = namespace["__name__"]
    public = sorted({*exports, *eager})

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            if submodules:
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as err:
                    if err.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__, public
