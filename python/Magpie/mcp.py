"""`python -m Magpie.mcp [ARGS]`: start `magpie mcp`.

On stdio unless MAGPIE_HOST or MAGPIE_PORT is set; then over HTTP
(`magpie mcp --http`, which reads both variables). ARGS go to `magpie mcp`.
"""

import os
import sys

from Magpie import exec_magpie


def mcp_args(argv: list[str], environ) -> list[str]:
    """The `magpie` arguments for `python -m Magpie.mcp ARGV` under ENVIRON."""
    wants_http = any(environ.get(v) for v in ("MAGPIE_HOST", "MAGPIE_PORT"))
    has_http = any(a == "--http" or a.startswith("--http=") for a in argv)
    # Last, so that `--http`'s optional value cannot swallow a following argument.
    return ["mcp", *argv, *(["--http"] if wants_http and not has_http else [])]


def main() -> None:
    exec_magpie(mcp_args(sys.argv[1:], os.environ))


if __name__ == "__main__":
    main()
