"""Long values in every string setting (issue 31 item 4): how long validation and the refusal's
message take, per setting, for values of up to 500,000 characters of several shapes.

Usage (from the project root)::

    PYTHONPATH=components:tests .venv/bin/python benchmarks/long_values.py [--length 500000]

Each setting of the profile and of every target that holds text (``settings_paths``: found by
walking the settings models, so a new one is timed too, with ``profile.egress.allow[0]``) is
set in the prod stack (all six targets) to each shape below, and the stack validated
(``load_stack``) and its refusal printed (``str(ConfigError)``: every value shown is redacted,
``credentials.redacted``). The figure is CPU seconds for validation and message together; the
budget is ``BUDGET_SECONDS`` whatever the input (``stackfile``'s promise). Not a test: it
prints figures, the slowest first, and exits 1 when any is over the budget.
"""

from __future__ import annotations

import argparse
import sys
import time

from settings_paths import of_type, refusal, setting_paths, with_value

BUDGET_SECONDS = 1.0

# Shapes that made a regular expression of the kit scan again from each position: runs of
# scheme characters without "://" (the credential redaction's URL userinfo), a URL with a long
# userinfo, host:port lookalikes, separators, credential-shaped prefixes, spaces.
SHAPES = {
    "letters": lambda n: "a" * n,
    "scheme-like": lambda n: ("a1+." * n)[:n],
    "url-userinfo": lambda n: "https://" + "u:" * (n // 2) + "@h",
    "colons": lambda n: "a:" * (n // 2),
    "slashes": lambda n: "a://" * (n // 4),
    "dots": lambda n: "a." * (n // 2),
    "hyphens": lambda n: "xoxa-" * (n // 5),
    "token-prefix": lambda n: "eyJ" * (n // 3),
    "spaces": lambda n: "a " * (n // 2),
    "digits": lambda n: "9" * n,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=500_000)
    args = parser.parse_args(argv)
    paths = ["profile.egress.allow[0]", *setting_paths(of_type(str))]
    figures: list[tuple[float, str, str, str]] = []
    for path in paths:
        for shape, make in SHAPES.items():
            values = with_value(path, make(args.length))
            start = time.process_time()
            refused = refusal(values)
            message = str(refused) if refused is not None else ""
            spent = time.process_time() - start
            verdict = "refused" if refused is not None else "accepted"
            figures.append((spent, path, shape, f"{verdict}, message {len(message):,} chars"))
    figures.sort(reverse=True)
    print(f"{len(paths)} settings x {len(SHAPES)} shapes, {args.length:,} characters each")
    print(f"{'CPU s':>7}  setting / shape")
    for spent, path, shape, what in figures[:15]:
        print(f"{spent:7.3f}  {path} / {shape} ({what})")
    total = sum(f[0] for f in figures)
    print(f"all {len(figures)} cases: {total:.1f} s CPU; budget {BUDGET_SECONDS} s each")
    over = [f for f in figures if f[0] > BUDGET_SECONDS]
    for spent, path, shape, _ in over:
        print(f"over budget: {path} / {shape}: {spent:.2f} s")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
