#!/usr/bin/env bash
# scripts/console.sh — the web console's build, its check, and what its
# browser tests need.
#
#   scripts/console.sh deps    install what the browser tests need, when absent:
#                              Debian's chromium-headless-shell and
#                              fonts-liberation (apt-get, as root) and the
#                              console's node_modules (npm ci)
#   scripts/console.sh check   rebuild the console from console/web into a
#                              temporary folder (typecheck, then vite build) and
#                              fail if that differs from the committed console/dist
#   scripts/console.sh build   npm ci if needed, then npm run build into console/dist
#
# The browser tests are cmd/strand's TestConsoleInBrowser (go test -race
# ./cmd/strand -run TestConsoleInBrowser -v): they drive the system's
# Chromium with playwright-core, which downloads no browser. The browser is
# /usr/bin/chromium-headless-shell (Chromium's headless build, the one
# Playwright itself runs headless: the same Blink, at two thirds of the full
# browser's CPU), or $STRAND_TEST_CHROMIUM when set (a path, or "skip":
# then deps installs none). fonts-liberation gives the console's monospace
# text the face the full browser's packages bring.
#
# node_modules is installed with npm ci when it is missing or older than
# package-lock.json (node_modules/.package-lock.json is what npm last
# installed). Node and npm are not installed here: they come with the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WEB=$ROOT/console/web
DIST=$ROOT/console/dist
tmp=

say() { echo "console.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# node_modules, with npm ci when it is missing or older than the lockfile.
node_deps() {
	command -v node >/dev/null || die "node not found: the console needs Node 20.19 or later (and npm)"
	command -v npm >/dev/null || die "npm not found: the console needs npm beside Node"
	if [[ ! -d $WEB/node_modules ]] || [[ $WEB/package-lock.json -nt $WEB/node_modules/.package-lock.json ]]; then
		say "installing console/web/node_modules (npm ci)..."
		(cd "$WEB" && npm ci --no-audit --no-fund --loglevel=error)
	fi
}

# Debian's Chromium headless shell, unless STRAND_TEST_CHROMIUM names another
# browser or skip.
chromium_deps() {
	local browser=${STRAND_TEST_CHROMIUM:-}
	if [[ $browser == skip ]]; then
		say "STRAND_TEST_CHROMIUM=skip: no browser needed"
		return
	fi
	if [[ -n $browser ]]; then
		[[ -x $browser ]] || die "STRAND_TEST_CHROMIUM=$browser is not an executable"
		return
	fi
	local shell=/usr/bin/chromium-headless-shell
	[[ -x $shell ]] && return
	[[ $EUID -eq 0 ]] || die "Chromium's headless shell is not installed and we are not root: sudo apt-get install chromium-headless-shell fonts-liberation (or set STRAND_TEST_CHROMIUM to a Chromium binary, or to skip)"
	say "Chromium's headless shell not found; installing Debian's chromium-headless-shell with apt-get (takes a minute)..."
	local out
	out=$(mktemp)
	if ! env DEBIAN_FRONTEND=noninteractive sh -c 'apt-get update -q && apt-get install -y -q chromium-headless-shell fonts-liberation' >"$out" 2>&1; then
		tail -n 30 "$out" >&2
		rm -f "$out"
		die "apt-get install chromium-headless-shell failed"
	fi
	rm -f "$out"
	[[ -x $shell ]] || die "apt-get installed chromium-headless-shell, but $shell is not there"
	say "installed $("$shell" --version 2>/dev/null)"
}

deps() {
	chromium_deps
	node_deps
}

# Builds the sources into a temporary folder and compares it with console/dist.
check() {
	node_deps
	local rc=0
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	say "npm run typecheck"
	(cd "$WEB" && npm run --silent typecheck) || die "console/web does not typecheck (npm run typecheck): see the errors above"
	say "vite build into $tmp/dist"
	(cd "$WEB" && node_modules/.bin/vite build --logLevel warn --outDir "$tmp/dist" --emptyOutDir) ||
		die "vite build of console/web failed: see the errors above"
	diff -r -q "$DIST" "$tmp/dist" >"$tmp/diff" 2>&1 || rc=$?
	if ((rc != 0)); then
		say "console/dist is not what console/web builds; the differences (committed console/dist, then the build):"
		sed -e "s|$DIST|console/dist|g" -e "s|$tmp/dist|build|g" "$tmp/diff" | head -n 40 >&2
		local n
		n=$(wc -l <"$tmp/diff")
		((n <= 40)) || say "... and $((n - 40)) more"
		die "rebuild it (scripts/console.sh build) and commit console/dist with its sources"
	fi
	say "console/dist is what console/web builds ($(find "$DIST" -type f | wc -l) files)"
}

build() {
	node_deps
	(cd "$WEB" && npm run build)
}

case ${1:-} in
deps) deps ;;
check) check ;;
build) build ;;
*) die "usage: $0 deps|check|build" ;;
esac
