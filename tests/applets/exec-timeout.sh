#!/usr/bin/env bash
# An exec'd plugin that never exits: `cni exec` kills it (and what it
# started) after CNI_EXEC_TIMEOUT seconds and fails with code 999, rolling
# back with DEL as for any failed ADD. An invalid CNI_EXEC_TIMEOUT keeps the
# default; a plugin that exits while a descendant holds its stdout is not
# waited for beyond a short grace. Namespace tcf<pid>, nothing else touched.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/fixtures/runtime/helpers.sh"

NSN="tcf$$"
ip netns add "$NSN" || { echo "1..0 # SKIP cannot create a network namespace"; exit 0; }
t_defer "ip netns del $NSN"
NS=/run/netns/$NSN
D="$T_TMP/slow"
mkdir -p "$D/bin"

# sleeper: on ADD sleeps SLEEPER_SECS (default: for ever, in a child it
# waits for, as a shell plugin running a slow command would), then answers;
# DEL is logged and succeeds. The pids of ADD go to $D/pids, to be killed
# at exit should the runtime have left one behind.
cat >"$D/bin/sleeper" <<EOF
#!/bin/bash
in=\$(cat)
echo "\$CNI_COMMAND" >>"$D/log"
[ "\$CNI_COMMAND" = ADD ] || exit 0
echo "\$\$" >>"$D/pids"
sleep "\${SLEEPER_SECS:-1000}" &
echo "\$!" >>"$D/pids"
wait
v=\$(jq -r .cniVersion <<<"\$in")
echo "{\"cniVersion\":\"\$v\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"\$CNI_NETNS\"}]}"
EOF
# leaker: answers ADD at once but leaves a process holding its stdout.
cat >"$D/bin/leaker" <<EOF
#!/bin/bash
in=\$(cat)
[ "\$CNI_COMMAND" = ADD ] || exit 0
sleep 1000 &
echo "\$!" >>"$D/pids"
v=\$(jq -r .cniVersion <<<"\$in")
echo "{\"cniVersion\":\"\$v\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"\$CNI_NETNS\"}]}"
EOF
chmod +x "$D/bin/sleeper" "$D/bin/leaker"
t_defer "[ -f $D/pids ] && xargs -r kill -9 <$D/pids"
echo '{"cniVersion":"1.0.0","name":"tcf-slow","plugins":[{"type":"sleeper"}]}' >"$RT_CONF/tcf-slow.conflist"
echo '{"cniVersion":"1.0.0","name":"tcf-leak","plugins":[{"type":"leaker"}]}' >"$RT_CONF/tcf-leak.conflist"

ms() { echo $(($(date +%s%N) / 1000000)); }
# Whether pid $1 still runs (a zombie waiting for init does not count).
alive() { [ -r "/proc/$1/status" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
none_alive() {
	local p
	for p in $(cat "$D/pids" 2>/dev/null); do
		alive "$p" && return 1
	done
	return 0
}

# 1. Never exits: killed at the deadline.
t0=$(ms)
CNI_EXEC_TIMEOUT=2 cx tcf-slow add "$NS" --cni-path "$D/bin"
t=$(($(ms) - t0))
t_err "ADD of a plugin that never exits fails" 999 '^plugin sleeper timed out after 2 s.*CNI_EXEC_TIMEOUT'
if [ "$t" -ge 2000 ] && [ "$t" -lt 8000 ]; then
	t_pass "after the 2 s timeout (${t} ms)"
else
	t_fail "after the 2 s timeout" "took ${t} ms"
fi
t_is "the plugin and its child were started" "$(wc -l <"$D/pids")" 2
for i in 1 2 3 4 5 6 7 8 9 10; do none_alive && break; sleep 0.1; done
t_ok "the plugin and its child are gone" none_alive
t_is "the failed ADD was rolled back with DEL" "$(tr '\n' ' ' <"$D/log")" "ADD DEL "
t_nok "nothing cached" test -e "$(rt_cache_file tcf-slow "$(rt_id "$NS")")"

# 2. An invalid CNI_EXEC_TIMEOUT is the default, not "no time at all".
: >"$D/pids"; : >"$D/log"
SLEEPER_SECS=1 CNI_EXEC_TIMEOUT=bogus cx tcf-slow add "$NS" --cni-path "$D/bin"
t_is "a slow plugin within the default timeout succeeds" "$RC" 0
t_json "  with its result" '.interfaces[0].name' eth0
cx tcf-slow del "$NS" --cni-path "$D/bin"
t_is "  and is deleted" "$RC" 0
SLEEPER_SECS=1 CNI_EXEC_TIMEOUT=0 cx tcf-slow add "$NS" --cni-path "$D/bin"
t_is "CNI_EXEC_TIMEOUT=0 is the default too" "$RC" 0
cx tcf-slow del "$NS" --cni-path "$D/bin"

# 3. A descendant holding stdout after the plugin exited: a short grace,
# not the whole timeout; the descendant is not ours to kill.
: >"$D/pids"
t0=$(ms)
CNI_EXEC_TIMEOUT=30 cx tcf-leak add "$NS" --cni-path "$D/bin"
t=$(($(ms) - t0))
t_is "a plugin leaving its stdout open still succeeds" "$RC" 0
if [ "$t" -lt 5000 ]; then t_pass "  without waiting for the timeout (${t} ms)"; else t_fail "  without waiting for the timeout" "took ${t} ms"; fi
t_ok "  its descendant was left running" alive "$(head -1 "$D/pids")"
xargs -r kill -9 <"$D/pids"
cx tcf-leak del "$NS" --cni-path "$D/bin"
t_is "  and it is deleted" "$RC" 0
t_done
