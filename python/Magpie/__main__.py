"""`python -m Magpie ARGS` and the `magpie` console script: exec the binary."""

import sys

from Magpie import exec_magpie


def main() -> None:
    exec_magpie(sys.argv[1:])


if __name__ == "__main__":
    main()
