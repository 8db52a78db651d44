"""Let ``import pipes`` reach the pipes pipeline library on Python 3.10-3.12.

Those Pythons ship a deprecated standard-library module named ``pipes``, and the standard library
comes before site-packages (and before an editable install's path) on ``sys.path``, so a plain
``import pipes`` would find it. The ``pipes-import-redirect.pth`` file installed beside this module
imports it at interpreter start; it puts a finder first on ``sys.meta_path`` that looks for a
*package* named ``pipes`` on ``sys.path`` outside the standard library, and defers to the normal
search when there is none. Nothing else is imported or changed; Python 3.13+ has no such module.
"""

import sys

if sys.version_info < (3, 13):
    import importlib.machinery
    import os

    class PipesLibraryFinder:
        """Finds the ``pipes`` package outside the standard library's directory."""

        @staticmethod
        def find_spec(fullname, path=None, target=None):
            if fullname != "pipes" or path is not None:
                return None
            stdlib = os.path.normcase(os.path.realpath(os.path.dirname(os.__file__)))
            entries = [
                entry
                for entry in sys.path
                if os.path.normcase(os.path.realpath(entry or os.getcwd())) != stdlib
            ]
            spec = importlib.machinery.PathFinder.find_spec(fullname, entries)
            if spec is None or not (spec.origin or "").endswith("__init__.py"):
                return None
            return spec

    if not any(type(f).__name__ == "PipesLibraryFinder" or getattr(f, "__name__", "") == "PipesLibraryFinder"
               for f in sys.meta_path):
        sys.meta_path.insert(0, PipesLibraryFinder)
