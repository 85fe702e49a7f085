#!/usr/bin/env bash
# cni exec: the built-in runtime. Configuration loading and derivation
# (SPEC.md sections 1 and 3) with recording plugin scripts; loopback in
# process and through --exec; bad lists failing with nothing applied; the
# rollback of a failed ADD; podman's default network (bridge, host-local,
# portmap, firewall, tuning) with our applets where they exist and the
# reference plugins otherwise; GC after a namespace vanished; the result
# cache read and written the way libcni (the reference library) does.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/fixtures/runtime/helpers.sh"

have_applet() { "$CNI_BIN" --list | grep -qx "$1"; }
have_ref() { [ -x "$RT_REF/$1" ]; }

# --- Loopback, built in: ADD, cache, CHECK, list, STATUS, DEL ---------------
cat >"$RT_CONF/10-lo.conflist" <<'EOF'
{"cniVersion":"1.0.0","cniVersions":["0.4.0","1.0.0","1.1.0","9.9.9"],"name":"trt-lo",
 "plugins":[{"type":"loopback"}]}
EOF
ns=$(rt_netns lo)
nsn=${ns##*/}
id=$(rt_id "$ns")
cf=$(rt_cache_file trt-lo "$id")

cx trt-lo add "$ns" --cni-path /nonexistent
t_is "add loopback in process (no CNI_PATH needed)" "$RC" 0
t_json "the highest supported of cniVersion and cniVersions" .cniVersion 1.1.0
t_json "the result is loopback's" '[.ips[].address]|join(",")' "127.0.0.1/8,::1/128"
t_ok "lo is up" lo_up "$nsn"
t_ok "the result is cached under results/NET-ID-IFNAME" test -f "$cf"
OUT=$(cat "$cf" 2>/dev/null)
t_json "cache: kind" .kind cniCacheV1
t_json "cache: names the attachment" '[.containerId,.ifName,.networkName,.netns]|join(" ")' \
	"$id eth0 trt-lo $ns"
t_json "cache: config is the base64 of the normalized list" \
	'.config|@base64d|fromjson|[.name,.cniVersion,.plugins[0].type]|join(" ")' "trt-lo 1.1.0 loopback"
t_json "cache: result in the list's version" '.result.cniVersion + " " + .result.ips[0].address' \
	"1.1.0 127.0.0.1/8"
t_is "cache: mode 0600" "$(stat -c %a "$cf" 2>/dev/null)" 600
cx trt-lo check "$ns"
t_is "check passes" "$RC:$OUT" "0:"
cx trt-lo add "$ns"
t_err "a second add of the attachment is refused" 4 'already attached.*del it'
t_ok "  leaving it in place" lo_up "$nsn"
crun list --cache-dir "$RT_CACHE"
t_like "list shows the attachment" "$OUT" "trt-lo +$id +eth0 +$ns +127.0.0.1/8"
crun list --cache-dir "$RT_CACHE" --json
t_json "list --json" '.[0]|[.network,.containerID,.ifname,.addresses[0]]|join(" ")' \
	"trt-lo $id eth0 127.0.0.1/8"
cx trt-lo status
t_is "status of a 1.1.0 list passes" "$RC:$OUT" "0:"
cx trt-lo del "$ns"
t_is "del prints nothing" "$RC:$OUT" "0:"
t_nok "lo is down after del" lo_up "$nsn"
t_nok "del removed the cache file" test -e "$cf"
cx trt-lo del "$ns"
t_is "del again succeeds" "$RC" 0
cx trt-lo check "$ns"
t_is "check after del: unknown attachment (code 3)" "$RC:$(jq -r .code <<<"$OUT")" "1:3"

# The same through exec: the applet reached as a symlink in CNI_PATH.
cx trt-lo add "$ns" --json
inproc=$(jq -cS . <<<"$OUT")
cx trt-lo del "$ns" -q
cx trt-lo add "$ns" --exec --cni-path "$T_BIN" --json
t_is "--exec gives the same result" "$(jq -cS . <<<"$OUT")" "$inproc"
cx trt-lo del "$ns" --exec --cni-path "$T_BIN"
t_is "--exec del" "$RC" 0
t_nok "--exec del brought lo down" lo_up "$nsn"
cx trt-lo add "$ns" --exec --cni-path "$T_TMP/empty"
t_like "--exec really executes (fails with an empty CNI_PATH)" "$RC $ERR" '^1 .*not found'
t_nok "nothing cached after that failure" test -e "$cf"

# Attachment parameters: --id, --ifname, --args and --cap-args are cached.
cx trt-lo add "$ns" --id ctr-1 -i eth7 --args 'IgnoreUnknown=1;FOO=bar' --cap-args '{"mac":"02:00:00:00:00:07"}' -q
t_is "add with --id --ifname --args --cap-args, quietly" "$RC:$OUT" "0:"
OUT=$(cat "$(rt_cache_file trt-lo ctr-1 eth7)" 2>/dev/null)
t_json "cache: cniArgs as pairs" '.cniArgs|tostring' '[["IgnoreUnknown","1"],["FOO","bar"]]'
t_json "cache: capabilityArgs" '.capabilityArgs.mac' "02:00:00:00:00:07"
cx trt-lo del --id ctr-1 -i eth7
t_is "del by --id without NETNS (netns from the cache)" "$RC" 0
t_nok "  and lo is down" lo_up "$nsn"

# --- Derivation of each plugin's request (SPEC.md section 3) ----------------
rec="$T_TMP/rec"
rt_recorder "$rec"
RP="$rec/bin"
cat >"$RT_CONF/20-rec.conflist" <<'EOF'
{
  "cniVersion": "1.1.0", "name": "trt-rec", "extra": "kept",
  "plugins": [
    {"type": "rec1", "name": "other", "cniVersion": "0.3.1", "foo": {"n": 1.50},
     "capabilities": {"portMappings": true, "mac": false},
     "prevResult": {"cniVersion": "1.1.0"}, "cni.dev/valid-attachments": [],
     "runtimeConfig": {"static": 1}},
    {"type": "rec2", "capabilities": {"mac": true}}
  ]
}
EOF
ns2=$(rt_netns rec)
cx trt-rec add "$ns2" --id rec-1 --cni-path "$RP" --args 'A=1' \
	--cap-args '{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}],"mac":"02:00:00:00:00:09","bandwidth":{}}'
t_is "add through two plugin scripts" "$RC" 0
t_json "the final result is the last plugin's" '[.ips[].address]|join(",")' "10.200.59.1/24,10.200.59.2/24"
OUT=$(cat "$rec/rec1.ADD.json")
t_json "name and cniVersion of the list replace the plugin's" '.name + " " + .cniVersion' "trt-rec 1.1.0"
t_like "other keys pass through unchanged (numbers as written)" "$(cat "$rec/rec1.ADD.json")" '"foo":\{"n":1\.50\}'
t_json "declared capabilities become runtimeConfig (replacing a static one)" \
	'.runtimeConfig|tostring' '{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}'
t_json "capabilities, prevResult and cni.dev/ keys are not passed" \
	'[has("capabilities"),has("prevResult"),has("cni.dev/valid-attachments")]|tostring' '[false,false,false]'
OUT=$(cat "$rec/rec2.ADD.json")
t_json "the second plugin gets the first one's result as prevResult" \
	'.prevResult.ips[0].address' "10.200.59.1/24"
t_json "  and only its own capabilities" '.runtimeConfig|tostring' '{"mac":"02:00:00:00:00:09"}'
t_like "environment of an exec'd plugin" "$(cat "$rec/rec2.ADD.env")" \
	"CNI_ARGS=A=1.CNI_COMMAND=ADD.CNI_CONTAINERID=rec-1.CNI_IFNAME=eth0.CNI_NETNS=$ns2.CNI_PATH=$RP"
cx trt-rec check "$ns2" --id rec-1 --cni-path "$RP"
t_is "check" "$RC" 0
OUT=$(cat "$rec/rec1.CHECK.json")
t_json "check: prevResult is the cached final result" '[.prevResult.ips[].address]|join(",")' \
	"10.200.59.1/24,10.200.59.2/24"
t_json "check: the capability arguments of the ADD (from the cache)" '.runtimeConfig.portMappings[0].hostPort' 8080
t_like "check: the CNI_ARGS of the ADD" "$(cat "$rec/rec1.CHECK.env")" "CNI_ARGS=A=1"
: >"$rec/log"
cx trt-rec del "$ns2" --id rec-1 --cni-path "$RP"
t_is "del" "$RC" 0
t_is "del runs the plugins in reverse" "$(cut -d' ' -f1,2 "$rec/log" | tr '\n' ,)" "DEL rec2,DEL rec1,"
OUT=$(cat "$rec/rec1.DEL.json")
t_json "del: prevResult is the cached final result" '[.prevResult.ips[].address]|join(",")' \
	"10.200.59.1/24,10.200.59.2/24"

# STATUS: every plugin, the first failure reported.
: >"$rec/log"
cx trt-rec status --cni-path "$RP"
t_is "status runs every plugin" "$RC:$(cut -d' ' -f1,2 "$rec/log" | tr '\n' ,)" "0:STATUS rec1,STATUS rec2,"
OUT=$(cat "$rec/rec1.STATUS.json")
t_json "status: no runtimeConfig from capabilities, no prevResult" \
	'[.runtimeConfig.portMappings == null, has("prevResult"), .name]|tostring' '[true,false,"trt-rec"]'
: >"$rec/log"
REC_FAIL=rec1:STATUS REC_FAIL_CODE=50 cx trt-rec status --cni-path "$RP"
t_is "status stops at the first failure, with its code" \
	"$RC:$(jq -r .code <<<"$OUT"):$(cut -d' ' -f2 "$rec/log" | tr '\n' ,)" "1:50:rec1,"
t_like "  and says which plugin" "$ERR" 'STATUS failed at plugin 1/2 \(rec1\): rec1 refuses STATUS'

# GC: cached attachments whose namespace lives stay valid, others are
# deleted and uncached; every plugin gets the valid list.
cx trt-rec add "$ns2" --id live-1 --cni-path "$RP" -q
ip netns add "cni-$T_TAG-gone"
t_defer "ip netns del cni-$T_TAG-gone"
cx trt-rec add "/run/netns/cni-$T_TAG-gone" --id dead-1 --cni-path "$RP" -q
ip netns del "cni-$T_TAG-gone"
: >"$rec/log"
cx trt-rec gc --cni-path "$RP" --valid extra-1/eth1 --json
t_is "gc" "$RC" 0
t_json "gc reports what it removed" '.removed|map(.containerID)|join(",")' "dead-1"
t_is "gc deleted the stale attachment first, then sent GC" \
	"$(cut -d' ' -f1-3 "$rec/log" | tr '\n' ,)" "DEL rec2 dead-1,DEL rec1 dead-1,GC rec1 ,GC rec2 ,"
OUT=$(cat "$rec/rec1.GC.json")
t_json "GC carries the valid attachments" \
	'."cni.dev/valid-attachments"|map(.containerID + "/" + .ifname)|sort|join(",")' "extra-1/eth1,live-1/eth0"
t_like "GC gets CNI_PATH and no attachment variables" "$(tr '\n' ' ' <"$rec/rec1.GC.env")" \
	"^CNI_COMMAND=GC CNI_PATH=$RP $"
t_nok "the stale entry is gone from the cache" test -e "$(rt_cache_file trt-rec dead-1)"
t_ok "the live entry stays" test -e "$(rt_cache_file trt-rec live-1)"
REC_FAIL=rec1:GC cx trt-rec gc --cni-path "$RP"
t_is "a GC failure does not stop the others" "$RC:$(tail -1 "$rec/log" | cut -d' ' -f1,2)" "1:GC rec2"
cx trt-rec del "$ns2" --id live-1 --cni-path "$RP" -q

# disableCheck and disableGC; a list before 0.4.0 cannot be checked.
cat >"$RT_CONF/21-rec-off.conflist" <<'EOF'
{"cniVersion":"1.1.0","name":"trt-off","disableCheck":true,"disableGC":"true","plugins":[{"type":"rec1"}]}
EOF
: >"$rec/log"
cx trt-off add "$ns2" --id off-1 --cni-path "$RP" -q
cx trt-off check "$ns2" --id off-1 --cni-path "$RP"
t_is "disableCheck: check runs nothing" "$RC:$(grep -c CHECK "$rec/log")" "0:0"
cx trt-off gc --cni-path "$RP"
t_is "disableGC: gc runs nothing" "$RC:$(grep -c GC "$rec/log")" "0:0"
cx trt-off del "$ns2" --id off-1 --cni-path "$RP" -q
echo '{"cniVersion":"0.3.1","name":"trt-old","plugins":[{"type":"rec1"}]}' >"$RT_CONF/22-old.conflist"
cx trt-old check "$ns2" --id old-1 --cni-path "$RP"
t_is "0.3.1: check is refused (code 1)" "$RC:$(jq -r .code <<<"$OUT")" "1:1"

# --- Loading: .conf wrapping, sibling plugins, show -------------------------
echo '{"cniVersion":"0.4.0","name":"trt-single","type":"rec1","x":1}' >"$RT_CONF/30-single.conf"
mkdir -p "$RT_CONF/trt-rec"
echo '{"type":"rec3","added":true}' >"$RT_CONF/trt-rec/10-extra.conf"
crun show --conf-dir "$RT_CONF" trt-single
t_json "show: a .conf becomes a one-plugin list" '[.name,.cniVersion,(.plugins|length),.plugins[0].x]|tostring' \
	'["trt-single","0.4.0",1,1]'
crun show --conf-dir "$RT_CONF" trt-rec
t_json "show: plugins from <dir>/<name>/*.conf follow the inlined ones" '[.plugins[].type]|join(",")' "rec1,rec2,rec3"
t_json "show: other list keys kept" .extra kept
jq '.loadOnlyInlinedPlugins = true' "$RT_CONF/20-rec.conflist" >"$T_TMP/x" && mv "$T_TMP/x" "$RT_CONF/20-rec.conflist"
crun show --conf-dir "$RT_CONF" trt-rec
t_json "show: loadOnlyInlinedPlugins ignores them" '[.plugins[].type]|join(",")' "rec1,rec2"
crun show --conf-dir "$RT_CONF"
t_like "show lists the networks" "$OUT" "trt-single +0.4.0 +rec1 +$RT_CONF/30-single.conf"
cx "$RT_CONF/30-single.conf" add "$ns2" --id single-1 --cni-path "$RP"
t_is "a FILE argument" "$RC:$(jq -r .cniVersion <<<"$OUT")" "0:0.4.0"
cx "$RT_CONF/30-single.conf" del "$ns2" --id single-1 --cni-path "$RP"
rm -rf "$RT_CONF/trt-rec" "$RT_CONF"/2?-*.conflist "$RT_CONF/30-single.conf"

# --- Bad lists: clear errors, nothing applied -------------------------------
bad() { # bad NAME JSON...: write $RT_CONF/NAME.conflist
	local n=$1
	shift
	printf '%s\n' "$*" >"$RT_CONF/$n.conflist"
}
bad b-noplugins '{"cniVersion":"1.0.0","name":"trt-b1"}'
bad b-empty '{"cniVersion":"1.0.0","name":"trt-b2","plugins":[]}'
bad b-dup1 '{"cniVersion":"1.0.0","name":"trt-b3","plugins":[{"type":"loopback"}]}'
bad b-dup2 '{"cniVersion":"1.0.0","name":"trt-b3","plugins":[{"type":"loopback"}]}'
bad b-unknown '{"cniVersion":"1.0.0","name":"trt-b4","plugins":[{"type":"loopback"},{"type":"nosuchplugin"}]}'
bad b-slash '{"cniVersion":"1.0.0","name":"trt-b5","plugins":[{"type":"loopback"},{"type":"../../bin/sh"}]}'
bad b-ipamslash '{"cniVersion":"1.0.0","name":"trt-b6","plugins":[{"type":"loopback"},{"type":"rec1","ipam":{"type":"/bin/x"}}]}'
bad b-versions '{"cniVersions":["2.0.0","0.9.0"],"name":"trt-b7","plugins":[{"type":"loopback"}]}'
bad b-badversion '{"cniVersion":"1.0","name":"trt-b8","plugins":[{"type":"loopback"}]}'
bad b-notype '{"cniVersion":"1.0.0","name":"trt-b9","plugins":[{"type":"loopback"},{"bridge":"x"}]}'
bad b-tool '{"cniVersion":"1.0.0","name":"trt-b10","plugins":[{"type":"loopback"},{"type":"exec"}]}'
bad b-caps '{"cniVersion":"1.0.0","name":"trt-b11","plugins":[{"type":"loopback","capabilities":{"mac":"yes"}}]}'
bad b-plugins '{"cniVersion":"1.0.0","name":"trt-b12","plugins":{"type":"loopback"}}'
bad b-name '{"cniVersion":"1.0.0","name":"trt/b13","plugins":[{"type":"loopback"}]}'
printf '{"cniVersion":"1.0.0","name":' >"$T_TMP/broken.conflist"
check_bad() { # check_bad DESC TARGET CODE REGEX
	cx "$2" add "$ns" --cni-path "$RP"
	t_err "$1" "$3" "$4"
	t_like "  with a one-line message" "$ERR" "^cni exec: .*ADD failed.*"
}
check_bad "no plugins list" trt-b1 7 'plugins.*missing'
check_bad "empty plugins list" trt-b2 7 'plugins.*empty'
check_bad "a network defined twice" trt-b3 7 "defined more than once.* in .*b-dup1.conflist and .*b-dup2.conflist"
check_bad "unknown type not in CNI_PATH" trt-b4 7 'plugins\[1\]\.type: plugin "nosuchplugin" not found'
check_bad "type with a /" trt-b5 7 'plugins\[1\]\.type: invalid plugin type'
check_bad "ipam.type with a /" trt-b6 7 'plugins\[1\]\.ipam\.type: invalid plugin type'
check_bad "only unsupported cniVersions" trt-b7 1 'no supported cniVersion in \[2\.0\.0, 0\.9\.0\]'
check_bad "a malformed cniVersion" trt-b8 1 'malformed version'
check_bad "a plugin without type" trt-b9 7 'plugins\[1\]: missing "type"'
check_bad "a tool as plugin type" trt-b10 7 'is a cni tool'
check_bad "capabilities that are not booleans" trt-b11 7 'capabilities\.mac'
check_bad "plugins not a list" trt-b12 7 'plugins: expected a list'
check_bad "an invalid network name" "$RT_CONF/b-name.conflist" 7 'invalid network name'
check_bad "a file that is not JSON" "$T_TMP/broken.conflist" 6 'invalid JSON'
check_bad "a network that is not there" trt-none 7 'no network configuration named "trt-none"'
t_nok "lo is still down: nothing ran" lo_up "$nsn"
t_is "no cache entry was written" "$(ls "$RT_CACHE/results" 2>/dev/null | grep -c trt-b)" 0
rm -f "$RT_CONF"/b-*.conflist

cx trt-lo add "$ns" --cap-args '[1]'
t_err "--cap-args must be an object" 6 'cap-args'
cx trt-lo add "$ns" --args 'A=1;B'
t_err "--args must be K=V pairs" 4 'CNI_ARGS'
cx trt-lo frobnicate "$ns"
t_is "an unknown command is a usage error" "$RC" 2
cx trt-lo add
t_is "add without NETNS is a usage error" "$RC" 2

# --- A failed ADD rolls back what ran, the failed plugin included ----------
cat >"$RT_CONF/40-rb.conflist" <<'EOF'
{"cniVersion":"1.0.0","name":"trt-rb","plugins":[{"type":"loopback"},{"type":"rec1"},{"type":"rec2"},{"type":"rec3"}]}
EOF
: >"$rec/log"
REC_FAIL=rec2:ADD cx trt-rb add "$ns" --cni-path "$RP"
t_err "the original error is reported" 11 'rec2 refuses ADD'
t_like "  naming the plugin" "$ERR" 'ADD failed at plugin 3/4 \(rec2\)'
t_is "DEL ran for rec2 and rec1, in reverse; rec3 never ran" \
	"$(cut -d' ' -f1,2 "$rec/log" | tr '\n' ,)" "ADD rec1,ADD rec2,DEL rec2,DEL rec1,"
t_nok "loopback was rolled back too" lo_up "$nsn"
OUT=$(cat "$rec/rec2.DEL.json")
t_json "the rollback's prevResult is the last good result" '.prevResult.ips[-1].address' "10.200.59.1/24"
t_nok "nothing cached" test -e "$(rt_cache_file trt-rb "$id")"
rm -f "$RT_CONF/40-rb.conflist"

# --- The reference library's cache: read theirs, write what they read -------
mkdir -p "$RT_CACHE/results"
cp "$RT_FIX/libcni-1.1.2-fixnet-fixture1-eth0.json" "$RT_CACHE/results/fixnet-fixture1-eth0"
crun list --cache-dir "$RT_CACHE" fixnet
t_like "list reads a cache file written by libcni 1.1.2" "$OUT" "fixnet +fixture1 +eth0 +- +127.0.0.1/8,::1/128"
cx fixnet del --id fixture1
t_is "del of a network gone from the conf dir uses libcni's cached config" "$RC" 0
t_like "  and says so" "$ERR" "using the configuration cached in"
t_nok "  and removes the cache file" test -e "$RT_CACHE/results/fixnet-fixture1-eth0"

if ! have_ref bridge || ! have_ref host-local || ! have_ref firewall; then
	t_skip "libcni interoperation" "reference plugins not in $RT_REF"
elif ! rt_driver; then
	t_skip "libcni interoperation" "libcni driver not built: $(tail -1 "$T_TMP/gobuild.log")"
else
	net=trt-lib
	t_defer "ip link del trt9$$ 2>/dev/null; true"
	cat >"$T_TMP/lib.conflist" <<EOF
{"cniVersion":"1.0.0","name":"$net","plugins":[
 {"type":"bridge","bridge":"trt9$$","isGateway":true,
  "ipam":{"type":"host-local","dataDir":"$T_TMP/ipam","ranges":[[{"subnet":"10.200.56.0/24"}]]}},
 {"type":"firewall"}]}
EOF
	nsl=$(t_netns lib)
	OUT=$(CNI_PATH=$RT_REF CNI_CACHE_DIR=$RT_CACHE CNI_ARGS='IgnoreUnknown=1' "$RT_DRV" add "$T_TMP/lib.conflist" "$nsl" lib-1 eth0 2>&1)
	rc=$?
	t_is "libcni adds (reference plugins)" "$rc" 0
	[ "$rc" = 0 ] || t_diag "$OUT"
	ip=$(jq -r '.ips[0].address' <<<"$OUT" 2>/dev/null)
	ip=${ip%/*}
	t_ok "  and holds $ip" rt_ip_held $net "$ip"
	cx "$T_TMP/lib.conflist" del "$nsl" --id lib-1 --exec --cni-path "$RT_REF"
	t_is "our del of libcni's attachment" "$RC" 0
	t_nok "  removed libcni's cache file" test -e "$(rt_cache_file $net lib-1)"
	t_nok "  released the address" rt_ip_held $net "$ip"
	t_is "  and the firewall's rules (it needs the cached prevResult)" "$(rt_rules_for "$ip")" 0

	cx "$T_TMP/lib.conflist" add "$nsl" --id lib-2 --exec --cni-path "$RT_REF" --args 'IgnoreUnknown=1' \
		--cap-args '{"portMappings":[]}'
	t_is "our add (reference plugins)" "$RC" 0
	ip=$(jq -r '.ips[0].address' <<<"$OUT" 2>/dev/null)
	ip=${ip%/*}
	OUT=$(cat "$(rt_cache_file $net lib-2)")
	t_json "our cache has every field libcni reads" \
		'[.kind,.containerId,.ifName,.networkName,.netns,(.config|@base64d|fromjson|.name),(.cniArgs|tostring),(.capabilityArgs|keys[0]),.result.cniVersion]|join(" ")' \
		"cniCacheV1 lib-2 eth0 $net $nsl $net [[\"IgnoreUnknown\",\"1\"]] portMappings 1.0.0"
	out=$(CNI_PATH=$RT_REF CNI_CACHE_DIR=$RT_CACHE "$RT_DRV" check "$T_TMP/lib.conflist" "$nsl" lib-2 eth0 2>&1)
	rc=$?
	t_is "libcni checks our attachment (bridge needs our cached prevResult)" "$rc" 0
	[ "$rc" = 0 ] || t_diag "$out"
	out=$(CNI_PATH=$RT_REF CNI_CACHE_DIR=$RT_CACHE "$RT_DRV" del "$T_TMP/lib.conflist" "$nsl" lib-2 eth0 2>&1)
	t_is "libcni deletes it" "$?" 0
	t_nok "  removing our cache file" test -e "$(rt_cache_file $net lib-2)"
	t_nok "  and releasing the address" rt_ip_held $net "$ip"
	t_is "  and the firewall's rules" "$(rt_rules_for "$ip")" 0
fi

# --- podman's default network ------------------------------------------------
# One run: two namespaces added, ping, check, del of one, the other's
# namespace deleted without DEL and collected by gc.
podman_run() { # podman_run TAG BRIDGE SUBNET(10.200.5x) CNI_PATH [--exec]
	local tag=$1 br=$2 sub=$3 path=$4 x=${5-} net="trt-pod-$1" a b ida idb ipa ipb
	rt_podman "$net" "$br" "$sub" "$RT_CONF/87-$net.conflist"
	if [ -n "${PODMAN_JQ-}" ]; then
		jq "$PODMAN_JQ" "$RT_CONF/87-$net.conflist" >"$T_TMP/x" && mv "$T_TMP/x" "$RT_CONF/87-$net.conflist"
	fi
	t_diag "$tag: $(jq -r '"cniVersion " + .cniVersion + ", plugins " + ([.plugins[].type]|join(" "))' "$RT_CONF/87-$net.conflist"), CNI_PATH $path ${x:-(built-in types in process)}"
	t_defer "ip link del $br 2>/dev/null; true"
	t_defer "rt_ipt_cleanup $net"
	a=$(t_netns "$tag-a")
	b=$(t_netns "$tag-b")
	ida=$(rt_id "$a")
	idb=$(rt_id "$b")
	cx "$net" add "$a" --cni-path "$path" $x --json
	t_is "$tag: add A" "$RC" 0
	[ "$RC" = 0 ] || t_diag "$OUT $ERR"
	PODMAN_RESULT=$OUT
	ipa=$(jq -r '.ips[0].address|split("/")[0]' <<<"$OUT" 2>/dev/null)
	t_json "$tag: A's interfaces: bridge, veth, eth0 in A" \
		'[.interfaces[0].name, (.interfaces|length), .interfaces[2].name, .interfaces[2].sandbox]|join(" ")' \
		"$br 3 eth0 $a"
	cx "$net" add "$b" --cni-path "$path" $x --cap-args '{"portMappings":[{"hostPort":18089,"containerPort":80,"protocol":"tcp"}]}'
	t_is "$tag: add B (with a port mapping)" "$RC" 0
	[ "$RC" = 0 ] || t_diag "$OUT $ERR"
	ipb=$(jq -r '.ips[0].address|split("/")[0]' <<<"$OUT" 2>/dev/null)
	t_ok "$tag: A pings B" ip netns exec "${a##*/}" ping -c1 -W2 "$ipb"
	t_ok "$tag: B pings A" ip netns exec "${b##*/}" ping -c1 -W2 "$ipa"
	cx "$net" check "$a" --cni-path "$path" $x
	t_is "$tag: check A" "$RC:$OUT" "0:"
	[ "$RC" = 0 ] || t_diag "$ERR"
	cx "$net" status --cni-path "$path" $x
	t_is "$tag: status" "$RC:$OUT" "0:"
	[ "$RC" = 0 ] || t_diag "$ERR"
	crun list --cache-dir "$RT_CACHE" "$net"
	t_is "$tag: list shows both" "$(grep -c "^$net " <<<"$OUT")" 2
	cx "$net" del "$a" --cni-path "$path" $x
	t_is "$tag: del A" "$RC:$OUT" "0:"
	[ "$RC" = 0 ] || t_diag "$ERR"
	t_nok "$tag: A's eth0 is gone" ip -n "${a##*/}" link show eth0
	t_nok "$tag: A's cache entry is gone" test -e "$(rt_cache_file "$net" "$ida")"
	t_nok "$tag: A's address is released" rt_ip_held "$net" "$ipa"
	t_is "$tag: no rule mentions A's address" "$(rt_rules_for "$ipa")" 0
	ip netns del "${b##*/}"
	cx "$net" gc --cni-path "$path" $x
	t_is "$tag: gc after B's namespace vanished" "$RC" 0
	[ "$RC" = 0 ] || t_diag "$OUT $ERR"
	t_like "$tag: gc removed B" "$OUT" "removed stale attachment $idb/eth0"
	t_nok "$tag: B's cache entry is gone" test -e "$(rt_cache_file "$net" "$idb")"
	t_nok "$tag: B's address is released" rt_ip_held "$net" "$ipb"
	if [ "$path" != "$RT_REF" ] && have_applet bridge; then
		t_is "$tag: no rule mentions B's address" "$(rt_rules_for "$ipb")" 0
	else
		# The reference bridge learns the masquerade rules to remove from
		# the interface, which vanished with the namespace.
		left=$(iptables-save -t filter 2>/dev/null | grep -F "$ipb")
		t_is "$tag: no filter rule mentions B's address (portmap, firewall)" "$left" ""
		t_is "$tag: no port mapping of B remains" "$(iptables-save -t nat 2>/dev/null | grep -c 18089)" 0
	fi
	ip link del "$br" 2>/dev/null
	rt_ipt_cleanup "$net"
	rm -f "$RT_CONF/87-$net.conflist"
}

missing=
for p in bridge host-local portmap firewall tuning; do
	have_applet "$p" || have_ref "$p" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	t_skip "podman's default network" "no plugin for:$missing"
else
	# Built-in types in process, the others from the reference plugins.
	podman_run native trt1 10.200.53 "$T_BIN:$RT_REF"
	native=$PODMAN_RESULT
	# The same list with every plugin executed: ours through the symlinks.
	rm -rf "$T_TMP/ipam"
	podman_run exec trt1 10.200.53 "$T_BIN:$RT_REF" --exec
	norm='[.cniVersion, ([.interfaces[].name]|.[0]+" "+.[2]), (.ips|tostring), (.routes|tostring), (.dns|tostring)]'
	t_is "in process and through --exec give the same result" \
		"$(jq -c "$norm" <<<"$PODMAN_RESULT")" "$(jq -c "$norm" <<<"$native")"
	# Spec 1.1.0 with the built-in applets alone: GC reaches them too.
	builtins=$("$CNI_BIN" --list | jq -R . | jq -sc .)
	if have_applet bridge && have_applet host-local; then
		PODMAN_JQ='.cniVersion = "1.1.0" | .plugins |= map(select(.type as $t | '"$builtins"' | index($t)))' \
			podman_run v11 trt3 10.200.55 "$T_BIN"
	else
		t_skip "podman's network, 1.1.0, built-in applets only" "bridge or host-local not built in"
	fi
	if have_ref bridge && have_ref host-local && have_ref portmap && have_ref firewall && have_ref tuning; then
		podman_run ref trt2 10.200.54 "$RT_REF" --exec
	else
		t_skip "podman's network with the reference plugins" "not installed in $RT_REF"
	fi
fi
t_done
