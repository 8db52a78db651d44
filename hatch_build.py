"""Build hook: ship the import redirect (see _pipes_import_redirect.py) in wheels and editable installs."""

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

REDIRECT_FILES = ("_pipes_import_redirect.py", "pipes-import-redirect.pth")


class PipesImportRedirectHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        key = "force_include_editable" if version == "editable" else "force_include"
        build_data.setdefault(key, {})
        for name in REDIRECT_FILES:
            build_data[key][name] = name
