#!/usr/bin/env python3
"""scripts/gotest-report.py — what `go test -json` says, as people read it.

    go test -json ./... | scripts/gotest-report.py FILE

Keeps every event in FILE (per-test times, for finding where the time goes)
and prints what plain `go test` prints: a line per package (ok, FAIL, no
test files), and the whole output of each test that failed and of each
package that failed outside a test (a build error, a panic, a timeout).
Ends with the count of tests and subtests run, passed, failed and skipped,
and the slowest tests. Exits 1 if any package or test failed, or if the
stream was cut short (a package that started and never ended).
"""
import json
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: go test -json ... | scripts/gotest-report.py FILE", file=sys.stderr)
        return 2
    out = {}  # (package, test or "") -> output lines
    ended = {}  # (package, test) -> (action, elapsed)
    started = set()  # packages that have begun
    finished = set()  # packages that have ended
    failed = False
    with open(sys.argv[1], "w", encoding="utf-8") as keep:
        for line in sys.stdin:
            keep.write(line)
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                # Not an event: go test's own output (a build failure).
                sys.stdout.write(line)
                failed = True
                continue
            pkg, test, action = ev.get("Package", ""), ev.get("Test", ""), ev.get("Action")
            if action == "start":
                started.add(pkg)
            elif action == "output":
                # A subtest's output is its top-level test's, in order.
                out.setdefault((pkg, test.split("/")[0]), []).append(ev.get("Output", ""))
            elif action in ("pass", "fail", "skip"):
                if test:
                    ended[(pkg, test)] = (action, ev.get("Elapsed", 0.0))
                    if action == "fail":
                        failed = True
                    if "/" not in test:
                        lines = out.pop((pkg, test), [])
                        if action == "fail":
                            sys.stdout.write(f"=== the output of {test} ({pkg}), which failed:\n")
                            sys.stdout.write("".join(lines))
                else:
                    finished.add(pkg)
                    lines = out.pop((pkg, ""), [])
                    if action == "fail":
                        failed = True
                        sys.stdout.write("".join(lines))
                    else:
                        # The package's last line: "ok  pkg 1.2s" or "?  pkg [no test files]".
                        last = [l for l in lines if l.startswith(("ok", "?", "FAIL"))]
                        sys.stdout.write(last[-1] if last else f"{action} {pkg}\n")
            sys.stdout.flush()
    cut = sorted(started - finished)
    for pkg in cut:
        failed = True
        print(f"FAIL {pkg}: its tests did not end (go test was stopped?)")
    top = [k for k in ended if "/" not in k[1]]
    sub = [k for k in ended if "/" in k[1]]
    count = lambda keys, a: sum(1 for k in keys if ended[k][0] == a)
    print(
        f"go test: {len(top)} tests and {len(sub)} subtests ran: "
        f"{count(top, 'pass') + count(sub, 'pass')} passed, "
        f"{count(top, 'fail') + count(sub, 'fail')} failed, "
        f"{count(top, 'skip') + count(sub, 'skip')} skipped"
    )
    slow = sorted(top, key=lambda k: ended[k][1], reverse=True)[:10]
    if slow:
        print("go test: the slowest tests: " + ", ".join(f"{t} ({p.split('/')[-1]}) {ended[(p, t)][1]:.0f}s" for p, t in slow))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
