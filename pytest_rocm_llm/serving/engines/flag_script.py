"""The flag-check script every engine adapter runs inside its engine's environment.

It runs by ``python -c`` (so it works through a container prefix too) and prints one line,
``FLAGCHECK_MARK`` then JSON: the engine's version and each profile's verdict, or the import
error. What differs between engines is how their launcher's parser is built and what it says
about a word it does not know; the rest is here once. Abbreviations are off in every parser:
a renamed flag must not silently match a longer, different one.
"""

from __future__ import annotations

import textwrap
from string import Template

FLAGCHECK_MARK = "@@ROCM_LLM_FLAGCHECK@@"  # the script's result line starts with it

# string.Template, not str.format: the script's own dict literals keep their braces.
_SCRIPT = Template(r"""
import argparse, json, sys
payload = json.loads(sys.argv[1])
try:
$imports
except Exception as exc:
    print("$mark" + json.dumps({"import_error": f"{type(exc).__name__}: {exc}"}))
    sys.exit(0)
try:
    $version_import
except Exception:
    version = "unknown"

class Parser($parser_base):
    def error(self, message):
        raise ValueError(message)

def failed(message, words):
    flags = [w.split("=", 1)[0] for w in words if w.startswith("-")]
    return {"ok": False, "message": message, "unknown": flags}

results = {}
for name, argv in payload.items():
$parse
print("$mark" + json.dumps({"version": version, "results": results}))
""")


def flag_check_script(imports: str, version_import: str, parser_base: str, parse: str) -> str:
    """The script for one engine: ``imports`` (what must import, else the engine is not
    there), ``version_import`` (binds ``version``), ``parser_base`` (the launcher's parser
    class, subclassed so its errors raise), and ``parse``: the loop body that checks one
    profile's ``argv`` and sets ``results[name]``, with ``failed(message, words)`` at hand."""
    def block(code: str) -> str:
        return textwrap.indent(textwrap.dedent(code).strip("\n"), "    ")
    return _SCRIPT.substitute(imports=block(imports), version_import=version_import,
                              parser_base=parser_base, parse=block(parse),
                              mark=FLAGCHECK_MARK)
