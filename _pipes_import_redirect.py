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
                entry for entry in sys.path if os.path.normcase(os.path.realpath(entry or os.getcwd())) != stdlib
            ]
            spec = importlib.machinery.PathFinder.find_spec(fullname, entries)
            if spec is None or not (spec.origin or "").endswith("__init__.py"):
                return None
            return spec

    if not any(
        type(f).__name__ == "PipesLibraryFinder" or getattr(f, "__name__", "") == "PipesLibraryFinder"
        for f in sys.meta_path
    ):
        sys.meta_path.insert(0, PipesLibraryFinder)


#: What to do when ``import pipes`` found the standard-library module: the one place that says it.
STDLIB_PIPES_HINT = (
    "'import pipes' found the deprecated standard-library module pipes ({origin}), not the pipes "
    "pipeline library. Python 3.10-3.12 search the standard library before any directory appended to "
    "sys.path. To run from a checkout without installing it, put the checkout FIRST: "
    "PYTHONPATH=/path/to/checkout python ... (or sys.path.insert(0, '/path/to/checkout') before "
    "'import pipes'; sys.path.append does not work), or install it: pip install -e /path/to/checkout."
)


def require_pipes_library(module=None):
    """The pipes library module (imported if not given); ImportError naming the fix if it is the stdlib one."""
    if module is None:
        import pipes as module  # noqa: PLC0415 - the import is what is being checked
    if getattr(module, "IS_PIPELINE_LIBRARY", False):
        return module
    raise ImportError(STDLIB_PIPES_HINT.format(origin=getattr(module, "__file__", "?")), name="pipes")
