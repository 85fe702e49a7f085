# TAP helpers for the integration tests. Source it from tests/applets/*.sh:
#
#   . "$CNI_TESTS/lib.sh"
#   t_netns ns1                       # creates cni-t-<pid>-ns1, removed at exit
#   cni_run loopback ADD "$NS" eth0 id1 <<< '{"cniVersion":"1.0.0",...}'
#   t_is "rc" "$RC" 0
#   t_json "ip" '.ips[0].address' "127.0.0.1/8"
#   t_done
#
# Everything a test creates is registered with t_defer and undone in
# reverse order on every exit path (success, failure, signal).
set -u

# Every test runs in a fresh network namespace of its own that plays the
# host: bridges, host veths, nft tables, iptables chains and sysctls the
# plugins create on "the host" live there and vanish with it, so a test
# can never leave anything on the real host, nor see another test's state.
# Named namespaces (t_netns) still appear under /run/netns and are removed
# by the test's cleanup. T_REAL_HOST=1 opts out.
if [ -z "${T_ISOLATED-}" ] && [ -z "${T_REAL_HOST-}" ] && [ "$(id -u)" -eq 0 ]; then
	export T_ISOLATED=1
	exec unshare --net -- bash "$0" "$@"
fi
if [ -n "${T_ISOLATED-}" ]; then
	ip link set lo up 2>/dev/null
	# A fresh namespace starts with forwarding off, like a fresh host.
	sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0 2>/dev/null || true
fi

: "${CNI_BIN:?CNI_BIN must point at the built cni binary}"
: "${CNI_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"

T_N=0
T_FAILED=0
T_TAG="t$$"
T_TMP=$(mktemp -d /tmp/cni-test.XXXXXX)
T_MAIN=$BASHPID

# Cleanup commands live in a file, so that helpers called inside $(...)
# (a subshell) can register them too; they run newest first.
t_defer() { printf '%s\n' "$*" >>"$T_TMP/defer"; }
t_cleanup() {
	[ "$BASHPID" = "$T_MAIN" ] || return 0
	if [ -f "$T_TMP/defer" ]; then
		tac "$T_TMP/defer" | while IFS= read -r c; do
			eval "$c" >/dev/null 2>&1 </dev/null || true
		done
	fi
	rm -rf "$T_TMP"
}
trap 't_cleanup' EXIT
trap 't_cleanup; exit 130' INT TERM

t_diag() { printf '# %s\n' "$*" | sed '2,$s/^/# /'; }

# t_pass/t_fail DESC
t_pass() { T_N=$((T_N + 1)); echo "ok $T_N - $1"; }
t_fail() {
	T_N=$((T_N + 1)); T_FAILED=$((T_FAILED + 1)); echo "not ok $T_N - $1"
	shift
	[ $# -gt 0 ] && t_diag "$@"
	return 0
}
# t_skip DESC REASON: a visible skip.
t_skip() { T_N=$((T_N + 1)); echo "ok $T_N - $1 # SKIP $2"; }

# t_ok DESC CMD...: passes when CMD exits 0.
t_ok() {
	local d=$1 out; shift
	if out=$("$@" 2>&1); then t_pass "$d"; else t_fail "$d" "command: $*" "$out"; fi
}
# t_nok DESC CMD...: passes when CMD fails.
t_nok() {
	local d=$1 out; shift
	if out=$("$@" 2>&1); then t_fail "$d" "unexpectedly succeeded: $*" "$out"; else t_pass "$d"; fi
}
# t_is DESC GOT WANT
t_is() {
	if [ "$2" = "$3" ]; then t_pass "$1"; else t_fail "$1" "got:  '$2'" "want: '$3'"; fi
}
# t_like DESC GOT REGEX (extended)
t_like() {
	if printf '%s' "$2" | grep -Pzq -- "(?ms)$3"; then t_pass "$1"; else t_fail "$1" "got:  '$2'" "want match: '$3'"; fi
}
t_unlike() {
	if printf '%s' "$2" | grep -Pzq -- "(?ms)$3"; then t_fail "$1" "got:  '$2'" "must not match: '$3'"; else t_pass "$1"; fi
}
# t_json DESC JQ-FILTER WANT: applies the filter to $OUT.
t_json() {
	local got
	got=$(printf '%s' "$OUT" | jq -r "$2" 2>&1)
	t_is "$1" "$got" "$3"
}
t_done() {
	echo "1..$T_N"
	[ "$T_FAILED" -eq 0 ]
	exit $?
}

# A bin dir with every applet symlinked, as a runtime's CNI_PATH would be.
T_BIN="$T_TMP/bin"
mkdir -p "$T_BIN"
"$CNI_BIN" --install "$T_BIN" >/dev/null 2>&1 || true
export CNI_PATH="$T_BIN"

# t_netns SHORT: create netns "cni-<tag>-SHORT", echo its path.
t_netns() {
	local n="cni-$T_TAG-$1"
	ip netns add "$n" || return 1
	t_defer "ip netns del $n"
	ip -n "$n" link set lo up
	echo "/run/netns/$n"
}

# cni_run APPLET CMD NETNS IFNAME CONTAINERID [CNI_ARGS]: config on stdin.
# Sets OUT (stdout), ERR (stderr) and RC.
cni_run() {
	local applet=$1 cmd=$2 netns=$3 ifname=$4 id=$5 args=${6-}
	local ef="$T_TMP/stderr"
	OUT=$(env CNI_COMMAND="$cmd" CNI_NETNS="$netns" CNI_IFNAME="$ifname" \
		CNI_CONTAINERID="$id" CNI_ARGS="$args" CNI_PATH="$CNI_PATH" \
		"$T_BIN/$applet" 2>"$ef")
	RC=$?
	ERR=$(cat "$ef")
	return 0
}

# t_err DESC CODE REGEX: expects a failed run whose stdout is a CNI error
# with CODE and a msg+details matching REGEX.
t_err() {
	local code msg
	code=$(printf '%s' "$OUT" | jq -r '.code' 2>/dev/null)
	msg=$(printf '%s' "$OUT" | jq -r '(.msg // "") + " " + (.details // "")' 2>/dev/null)
	if [ "$RC" -ne 0 ] && [ "$code" = "$2" ] && printf '%s' "$msg" | grep -Pzq -- "(?ms)$3"; then
		t_pass "$1"
	else
		t_fail "$1" "rc=$RC out=$OUT" "want code $2 and message matching '$3'"
	fi
}

# t_spy TOOL...: wrappers for TOOLs in "$T_TMP/spy" (put it first in PATH)
# that log their name to "$T_TMP/spy.log" and run the real tool.
t_spy() {
	local t real
	mkdir -p "$T_TMP/spy"
	for t in "$@"; do
		real=$(PATH=/usr/sbin:/sbin:/usr/bin:/bin command -v "$t") || continue
		printf '#!/bin/sh\necho %s >>"%s"\nexec %s "$@"\n' "$t" "$T_TMP/spy.log" "$real" >"$T_TMP/spy/$t"
		chmod +x "$T_TMP/spy/$t"
	done
}

# Snapshot of host network state, to prove a failed call changed nothing.
t_host_state() {
	{
		ip -br link | awk '{print $1}' | sort
		ip -br addr | sort
		ip route show table all 2>/dev/null | grep -v '^local\|^broadcast\|proto kernel' | sort
		nft list ruleset 2>/dev/null | grep -c . || true
	} 2>/dev/null
}
