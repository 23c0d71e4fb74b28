"""Dispatch ``python tools/editions COMMAND [ARGS]`` to the command's module."""

from __future__ import annotations

import importlib

COMMANDS = {"stamp": "stamp", "assignments": "assignments", "site": "website", "guide": "guide",
            "i18n": "i18n"}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print("usage: python tools/editions {" + "|".join(COMMANDS) + "} [options]")
        return 2
    module = importlib.import_module(f"editions.{COMMANDS[argv[0]]}")
    return module.main(argv[1:])
